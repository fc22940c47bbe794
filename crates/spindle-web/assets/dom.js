// The page's small shared helpers: element lookup and creation, the JSON API, the banner.
// Every module imports what it uses from here (no helper is passed around or made global).

export const $ = (id) => document.getElementById(id);

export function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

// A JSON request to the server's API: GET without a body, POST with one (or `method` given:
// PATCH, DELETE). Rejects with the server's `error` text when the answer is not a success.
export const api = (path, body, method) =>
  fetch(path, {
    method: method || (body === undefined ? "GET" : "POST"),
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

// The line above the transcript. Each source of banners has a key: the server's (`web_banner`
// ops, key "server"), and the page's own failures (a load, a list, an action; key "page" unless
// the caller names its own). A source's text replaces its earlier one, no text clears it, and
// the line shows the latest banner still set: a banner goes when the condition it reports passes
// (the list loads again, the next turn succeeds), not only when another replaces it.
const banners = new Map(); // key -> { text, level }, in the order set

function drawBanner() {
  const b = $("banner");
  const latest = [...banners.values()].pop();
  if (!latest) { b.hidden = true; b.textContent = ""; delete b.dataset.level; return; }
  b.hidden = false;
  b.dataset.level = latest.level || "info";
  b.textContent = latest.text;
}

export function banner(text, level, key) {
  const k = key || "page";
  banners.delete(k);
  if (text) banners.set(k, { text: String(text), level: level || "info" });
  drawBanner();
}

// Clears the page's own banners (every key but the server's), or with `all` the server's too
// (another session is shown).
export function clearBanners(all) {
  for (const key of [...banners.keys()]) if (all || key !== "server") banners.delete(key);
  drawBanner();
}
