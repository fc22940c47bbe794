// The page's small shared helpers: element lookup and creation, the JSON API, the banner.
// Every module imports what it uses from here (no helper is passed around or made global).

export const $ = (id) => document.getElementById(id);

export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

// A JSON request to the server's API: GET without a body, POST with one. Rejects with the
// server's `error` text when the answer is not a success.
export const api = (path, body) =>
  fetch(path, {
    method: body === undefined ? "GET" : "POST",
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: "same-origin",
  }).then(async (response) => {
    const text = await response.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { data = { error: text }; }
    if (!response.ok) throw new Error((data && data.error) || response.statusText);
    return data;
  });

// The line above the transcript; no text hides it.
export function banner(text, level) {
  const b = $("banner");
  if (!text) { b.hidden = true; b.textContent = ""; return; }
  b.hidden = false;
  b.dataset.level = level || "info";
  b.textContent = text;
}
