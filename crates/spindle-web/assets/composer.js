// The prompt box: which key sends (Enter, or Ctrl/Cmd+Enter: a setting kept in localStorage),
// the slash-command palette (from the agent's available commands), `@` file
// completion (GET /api/sessions/{id}/files), pasted or dropped images shown as thumbnails, and
// sending. What a mention or an image becomes on the wire is the server's business; this file
// only sends `{ text, images }`. app.js creates it (createComposer).

import { $, el, api } from "./dom.js";

// A canvas with the decoded image scaled to fit a `size` pixel square (drawn, never loaded
// from a URL: the page's CSP allows images from the server only). Closes the bitmap.
export function drawThumbnail(bitmap, size) {
  const scale = Math.min(1, size / Math.max(bitmap.width, bitmap.height, 1));
  const canvas = document.createElement("canvas");
  canvas.width = Math.max(1, Math.round(bitmap.width * scale));
  canvas.height = Math.max(1, Math.round(bitmap.height * scale));
  canvas.getContext("2d").drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  bitmap.close();
  return canvas;
}

export function createComposer(ctx) {
  const input = $("prompt-input");
  const palette = $("palette");

  // The largest image this page attaches, and all images of one prompt together (the server
  // takes 16 MiB of JSON; base64 adds a third).
  const MAX_IMAGE_BYTES = 8 << 20;
  const MAX_IMAGES_BYTES = 11 << 20;

  // ---- inline messages --------------------------------------------------------------------

  function showError(text) {
    const box = $("prompt-error");
    box.textContent = text || "";
    box.hidden = !text;
  }

  // ---- the palette (commands and files share it) ----------------------------------------------

  // { kind: "command" | "file", items, index, start, end } while open.
  let open = null;
  let fileQuery = 0; // answers of older file queries are dropped
  let fileTimer = null;

  function closePalette() {
    open = null;
    palette.hidden = true;
    palette.replaceChildren();
    input.setAttribute("aria-expanded", "false");
    input.removeAttribute("aria-activedescendant");
    if (fileTimer) { clearTimeout(fileTimer); fileTimer = null; }
  }

  function showPalette(kind, items, start, end, empty) {
    open = { kind, items, index: 0, start, end };
    palette.replaceChildren();
    palette.dataset.kind = kind;
    if (!items.length) {
      palette.appendChild(el("li", "palette-empty", empty));
    }
    items.forEach((item, i) => {
      const li = el("li", "palette-item");
      li.setAttribute("role", "option");
      li.id = "palette-option-" + i;
      li.dataset.index = String(i);
      if (kind === "command") {
        const head = el("div", "palette-head");
        head.appendChild(el("span", "palette-name", "/" + item.name));
        if (item.hint) head.appendChild(el("span", "palette-hint", item.hint));
        li.appendChild(head);
        if (item.description) li.appendChild(el("div", "palette-description", item.description));
      } else {
        li.appendChild(el("span", "palette-name", item));
      }
      // mousedown, not click: the text box keeps the focus and the caret.
      li.addEventListener("mousedown", (event) => {
        event.preventDefault();
        if (open) { open.index = i; pick(); }
      });
      palette.appendChild(li);
    });
    highlight();
    palette.hidden = false;
    input.setAttribute("aria-expanded", "true");
  }

  function highlight() {
    if (!open) return;
    for (const li of palette.children) {
      const on = li.dataset.index === String(open.index);
      li.setAttribute("aria-selected", on ? "true" : "false");
      if (on) {
        input.setAttribute("aria-activedescendant", li.id);
        li.scrollIntoView({ block: "nearest" });
      }
    }
  }

  // The agent's commands: `input.hint` names what follows the command.
  function commandList() {
    const list = [];
    for (const c of ctx.commands()) {
      if (!c || typeof c !== "object" || typeof c.name !== "string") continue;
      const hint = c.input && typeof c.input === "object" && typeof c.input.hint === "string" ? c.input.hint : "";
      list.push({ name: c.name, description: typeof c.description === "string" ? c.description : "", hint, takesInput: !!c.input });
    }
    return list;
  }

  function matchCommands(query) {
    const q = query.toLowerCase();
    const all = commandList();
    const starts = all.filter((c) => c.name.toLowerCase().startsWith(q));
    const inside = all.filter((c) => !c.name.toLowerCase().startsWith(q) && c.name.toLowerCase().includes(q));
    return starts.concat(inside).slice(0, 50);
  }

  // What the text before the caret asks for: a command at the start, or a file after `@`.
  function update() {
    const caret = input.selectionStart;
    if (caret !== input.selectionEnd) { closePalette(); return; }
    const before = input.value.slice(0, caret);
    const command = /^\/(\S*)$/.exec(before);
    if (command) {
      const found = matchCommands(command[1]);
      showPalette("command", found, 0, caret, ctx.commands().length ? "No command matches." : "The agent offers no commands.");
      return;
    }
    const mention = /(?:^|\s)@([^\s"@]*)$/.exec(before);
    if (mention && ctx.session() !== null) {
      const start = caret - mention[1].length - 1;
      queryFiles(mention[1], start, caret);
      return;
    }
    closePalette();
    showHint();
  }

  function queryFiles(prefix, start, end) {
    if (fileTimer) clearTimeout(fileTimer);
    const asked = ++fileQuery;
    const session = ctx.session();
    fileTimer = setTimeout(async () => {
      fileTimer = null;
      let files;
      try {
        const answer = await api("/api/sessions/" + encodeURIComponent(session) + "/files?prefix=" + encodeURIComponent(prefix));
        files = answer && Array.isArray(answer.files) ? answer.files.map(String) : [];
      } catch (e) {
        if (asked === fileQuery) showPalette("file", [], start, end, "No file list: " + e.message);
        return;
      }
      // Still the same question (nothing typed since, same session)?
      if (asked !== fileQuery || session !== ctx.session()) return;
      showPalette("file", files, start, end, prefix ? "No file starts with " + prefix : "No files.");
    }, 120);
  }

  function pick() {
    if (!open || !open.items.length) return false;
    const item = open.items[open.index];
    const { kind, start, end } = open;
    let insert;
    if (kind === "command") {
      insert = "/" + item.name + (item.takesInput ? " " : "");
    } else {
      const quoted = /\s/.test(item) ? '@"' + item + '"' : "@" + item;
      // A directory keeps completing; a file ends with a space.
      insert = item.endsWith("/") && !/\s/.test(item) ? quoted : quoted + " ";
    }
    input.setRangeText(insert, start, end, "end");
    closePalette();
    if (kind === "file" && insert.endsWith("/")) update();
    else showHint();
    input.focus();
    return true;
  }

  // Under the box: the input hint of the command being typed.
  function showHint() {
    const m = /^\/(\S+)\s/.exec(input.value);
    const command = m ? commandList().find((c) => c.name === m[1]) : null;
    const hint = $("prompt-hint");
    hint.textContent = command && command.hint ? "/" + command.name + " " + command.hint : "";
    hint.hidden = !hint.textContent;
  }

  input.addEventListener("input", () => { update(); showError(null); });
  input.addEventListener("blur", () => closePalette());
  // The caret moved by the mouse: what it stands in decides again.
  input.addEventListener("click", () => { if (open) update(); });
  // Which key sends: "enter" (Enter sends, Shift+Enter adds a line, as in Zed) or "mod-enter"
  // (Ctrl/Cmd+Enter sends, Enter adds a line). Ctrl/Cmd+Enter sends in both.
  const SEND_KEY = "spindle.sendKey";
  const storedSendKey = () => {
    try { return localStorage.getItem(SEND_KEY) === "mod-enter" ? "mod-enter" : "enter"; } catch (_) { return "enter"; }
  };
  let sendKey = storedSendKey();

  // While a v1 agent's turn runs, a prompt sent is queued (queue.js shows the queue).
  let queueing = false;

  // The placeholder and the Send button say the rule in force.
  function showSendRule() {
    const rule = sendKey === "enter" ? "Enter sends, Shift+Enter adds a line" : "Ctrl+Enter sends, Enter adds a line";
    input.placeholder = queueing
      ? "A turn is running: what you send now is queued and sent when it ends (" + rule + ")"
      : "Message the agent: / for commands, @ for files, paste or drop images (" + rule + ")";
    $("send").textContent = queueing ? "Queue" : "Send";
    input.setAttribute("aria-keyshortcuts", sendKey === "enter" ? "Enter" : "Control+Enter Meta+Enter");
    $("send").title = "Send (" + (sendKey === "enter" ? "Enter" : "Ctrl+Enter") + ")";
  }

  function setSendKey(value) {
    sendKey = value === "mod-enter" ? "mod-enter" : "enter";
    try { localStorage.setItem(SEND_KEY, sendKey); } catch (_) { /* kept for this page only */ }
    showSendRule();
  }
  showSendRule();
  // Another tab changed it.
  window.addEventListener("storage", (event) => { if (event.key === SEND_KEY) { sendKey = storedSendKey(); showSendRule(); } });

  function submit(event) {
    closePalette();
    $("prompt-form").requestSubmit();
    event.preventDefault();
  }

  input.addEventListener("keydown", (event) => {
    // A key that ends an IME composition (Japanese, Chinese, ...) belongs to the composition.
    if (event.isComposing || event.keyCode === 229) return;
    const enter = event.key === "Enter";
    if (enter && (event.ctrlKey || event.metaKey)) { submit(event); return; }
    if (open) {
      const count = open.items.length;
      if (event.key === "ArrowDown" || event.key === "ArrowUp") {
        if (count) open.index = (open.index + (event.key === "ArrowDown" ? 1 : count - 1)) % count;
        highlight();
        event.preventDefault();
        return;
      }
      if ((enter && !event.shiftKey) || event.key === "Tab") {
        // Enter picks the completion; with nothing to pick it goes on as Enter does.
        if (pick()) { event.preventDefault(); return; }
        if (event.key === "Tab") { closePalette(); return; }
      } else if (event.key === "Escape") {
        closePalette();
        event.preventDefault();
        return;
      }
    }
    if (enter && sendKey === "enter" && !event.shiftKey && !event.altKey) submit(event);
  });

  // ---- images ---------------------------------------------------------------------------------

  let images = []; // { id, name, mimeType, data (base64), size, node }
  let nextImage = 0;

  // Whether the agent takes images: true, false, or null while its facts are unknown.
  function imagesAccepted() {
    const facts = ctx.agent();
    if (!facts || !facts.promptCapabilities || typeof facts.promptCapabilities !== "object") return null;
    return facts.promptCapabilities.image === true;
  }

  const NO_IMAGES = "This agent does not accept images (it does not advertise the image prompt capability).";

  async function addImage(file) {
    if (imagesAccepted() === false) {
      showError(NO_IMAGES + " The image was not attached.");
      return;
    }
    if (file.size > MAX_IMAGE_BYTES) {
      showError((file.name || "The image") + " is too large (" + Math.ceil(file.size / 1048576) + " MiB; at most 8 MiB).");
      return;
    }
    if (images.reduce((n, i) => n + i.size, 0) + file.size > MAX_IMAGES_BYTES) {
      showError("Together the images would exceed 11 MiB; remove one first.");
      return;
    }
    let bitmap;
    try {
      bitmap = await createImageBitmap(file);
    } catch (_) {
      showError((file.name || "The pasted file") + " is not an image this browser can read.");
      return;
    }
    const data = await new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
      reader.onerror = () => reject(reader.error);
      reader.readAsDataURL(file);
    }).catch(() => null);
    if (data === null) {
      bitmap.close();
      showError("The image could not be read.");
      return;
    }
    const image = { id: ++nextImage, name: file.name || "pasted image", mimeType: file.type, data, size: file.size, node: null };
    image.node = thumbnail(image, bitmap);
    images.push(image);
    $("attachments").appendChild(image.node);
    $("attachments").hidden = false;
    showError(null);
  }

  function thumbnail(image, bitmap) {
    const figure = el("figure", "thumb");
    figure.dataset.image = String(image.id);
    figure.appendChild(drawThumbnail(bitmap, 72));
    const remove = el("button", "thumb-remove", "\u00d7");
    remove.type = "button";
    remove.title = "Remove " + image.name;
    remove.setAttribute("aria-label", "Remove " + image.name);
    remove.addEventListener("click", () => removeImage(image.id));
    figure.append(remove, el("figcaption", null, image.name + " (" + Math.max(1, Math.round(image.size / 1024)) + " KiB)"));
    return figure;
  }

  function removeImage(id) {
    const image = images.find((i) => i.id === id);
    if (!image) return;
    image.node.remove();
    images = images.filter((i) => i.id !== id);
    $("attachments").hidden = images.length === 0;
    if (!images.length) showError(null);
  }

  function clearImages() {
    images = [];
    $("attachments").replaceChildren();
    $("attachments").hidden = true;
  }

  input.addEventListener("paste", (event) => {
    const files = [...(event.clipboardData ? event.clipboardData.items : [])]
      .filter((item) => item.kind === "file" && item.type.startsWith("image/"))
      .map((item) => item.getAsFile())
      .filter(Boolean);
    if (!files.length) return; // text pastes as usual
    event.preventDefault();
    for (const file of files) addImage(file);
  });

  const form = $("prompt-form");
  form.addEventListener("dragover", (event) => {
    if (event.dataTransfer && [...event.dataTransfer.types].includes("Files")) {
      event.preventDefault();
      form.classList.add("dropping");
    }
  });
  form.addEventListener("dragleave", () => form.classList.remove("dropping"));
  form.addEventListener("drop", (event) => {
    form.classList.remove("dropping");
    const files = event.dataTransfer ? [...event.dataTransfer.files] : [];
    if (!files.length) return;
    event.preventDefault();
    const other = files.filter((f) => !f.type.startsWith("image/"));
    Promise.all(files.filter((f) => f.type.startsWith("image/")).map(addImage)).then(() => {
      if (other.length) showError("Only images can be attached; mention files with @path instead (" + other.map((f) => f.name).join(", ") + ").");
    });
  });

  // ---- sending --------------------------------------------------------------------------------

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = input.value;
    const session = ctx.session();
    if (session === null || (!text.trim() && !images.length)) return;
    if (images.length && imagesAccepted() === false) {
      showError(NO_IMAGES + " Remove the image to send this prompt.");
      return;
    }
    const body = { text };
    if (images.length) body.images = images.map((i) => ({ mimeType: i.mimeType, data: i.data }));
    $("send").disabled = true;
    try {
      await api("/api/sessions/" + encodeURIComponent(session) + "/prompt", body);
      if (session === ctx.session()) {
        input.value = "";
        clearImages();
        closePalette();
        showHint();
        showError(null);
      }
      ctx.sent();
    } catch (e) {
      showError("Prompt not sent: " + e.message);
    } finally {
      $("send").disabled = false;
    }
  });

  // Another session: the half-written text stays, images and messages meant for the last
  // session go.
  function reset() {
    closePalette();
    clearImages();
    showError(null);
    showHint();
  }

  function setQueueing(value) {
    if (queueing === !!value) return;
    queueing = !!value;
    showSendRule();
  }

  return Object.freeze({ reset, sendKey: () => sendKey, setSendKey, setQueueing, focus: () => input.focus() });
}
