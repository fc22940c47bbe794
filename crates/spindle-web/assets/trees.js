// Finished messages get the server's rendering: a drawn message that no longer streams gets the
// server's tree of its markdown (with highlighted code; see markdown.js `show`), asked for in one
// batch per frame. Kept only while drawn: the server caches it, so asking again after a scroll is
// cheap. A longer message keeps the page's own rendering: its tree would be one long task to
// parse and draw, and the server highlights no more than 64 KiB of a message anyway.

import { api } from "./dom.js";
import { entries, recs, transcript, session, epoch } from "./model.js";

const TREE_BATCH = 200;

// The app's: `streaming(rec)`: the record may still grow (the session's turn is open);
// `search.redrawn(rec)`: a record's DOM was replaced; `schedule()`: a frame is wanted.
export function createTrees({ search, streaming, schedule }) {
  let asked = 0;

  function ask() {
    const current = session();
    if (asked > 0 || current === null) return;
    const wanted = [];
    const maxText = entries.DRAWN_LIMIT;
    for (const rec of transcript.drawn()) {
      if (wanted.length >= TREE_BATCH) break;
      if (rec.long || rec.shed || !rec.renderer || rec.treeAsked === rec.text.length || !rec.text || streaming(rec)) continue;
      if (rec.text.length > maxText) continue;
      if (!entries.MARKDOWN_KINDS.has(rec.kind) || rec.renderer.hasTree) continue;
      rec.treeAsked = rec.text.length;
      wanted.push(rec);
    }
    if (!wanted.length) return;
    const at = epoch();
    asked += 1;
    api("/api/sessions/" + encodeURIComponent(current) + "/rendered", { entries: wanted.map((rec) => rec.id) })
      .then((answer) => {
        if (at !== epoch()) return;
        for (const item of Array.isArray(answer && answer.rendered) ? answer.rendered : []) {
          const rec = recs.get(String(item.id));
          // Only for the text the page shows now, and only while the entry is drawn.
          if (!rec || !rec.renderer || rec.text.length !== item.length || rec.shownText !== rec.text) continue;
          rec.renderer.show(item.tree, item.length);
          entries.codeCopies(rec.body);
          if (rec.list) rec.list.changed(rec);
          search.redrawn(rec);
        }
      })
      .catch(() => { /* the page's own rendering stays */ })
      .finally(() => { asked -= 1; schedule(); });
  }

  return Object.freeze({ ask });
}
