// Every op the server sends the page, in one table: op name -> what the page does with it.
// The names and shapes are the server's: the engine's render ops (`RenderOp` in spindle-engine:
// entries, text, state, usage, commands, session info, notices) and the web layer's `web_*` ops
// (cards, banner, status, facts, the window of a snapshot). An op the table does not name is
// ignored. Each handler's comment names the fields the server sends with that op.
//
// `to` holds the page's parts the ops go to. `counter` is the op's batch counter: entry and text
// ops of batches a fetched page of entries already reflects are not applied again (app.js).

import { onCheckpoints } from "./checkpoints.js";

export function opHandlers(to) {
  const { model, range, panels, cards } = to;
  return Object.freeze({
    // ---- the engine's render ops ----
    // {index, entry}: a new timeline entry (or, for a known id, its whole view again).
    insert_entry: (op, counter) => model.insertEntry(op, counter),
    // {id, entry}: the entry's whole view, text included.
    update_entry: (op, counter) => model.updateEntry(op, counter),
    // {id, text}: appended to the entry's text.
    append_text: (op, counter) => model.appendText(op, counter),
    // {id, len}: the entry's text cut to `len` UTF-16 code units.
    truncate_text: (op, counter) => model.truncateText(op, counter),
    // {state}: the session state (the page shows status, stopReason, error, turnOpen).
    set_state: (op) => to.setState(op),
    // {usage}: the latest wins; drawn once per frame (a fast stream sends one per chunk).
    set_usage: (op) => to.setUsage(op),
    // {commands}: the agent's available commands, as it sent them.
    set_commands: (op) => to.setCommands(op.commands),
    // {info}: title, mode and config options.
    set_session_info: (op) => panels.onSessionInfo(op.info),
    // {severity, title, description?}: a live notice, never stored.
    notice: (op) => panels.showNotice(op),

    // ---- the web layer's ops ----
    // {first, total}: in a snapshot, the timeline index its entries start at.
    web_window: (op) => range.setWindow(op.first),
    // {level, text}: the line above the transcript (no text hides it).
    web_banner: (op) => to.banner(op.text, op.level),
    // {key, title, options, toolCallId, ruleKey, ruleLabel}: a permission request.
    web_permission: (op) => cards.showPermission(op),
    // {key, outcome}: the request was answered.
    web_permission_resolved: (op) => cards.resolvePermission(op),
    // {requestId, sessionId, path, oldText, newText, toolCallId}: a file write to review.
    web_review: (op) => cards.showReview(op),
    // {requestId, decision, message}: the review was decided.
    web_review_resolved: (op) => cards.resolveReview(op),
    // {key, elicitation: {message, mode, diagnostics, form?: {title, description, fields}, url?:
    // {url, host}}}: the agent asks for input (a form card, or a URL it never opens).
    web_elicitation: (op) => cards.showElicitation(op),
    // {key, action}: the elicitation was answered, withdrawn or completed.
    web_elicitation_resolved: (op) => cards.resolveElicitation(op),
    // {title, toolCallId, optionId, ruleKey, ruleLabel}: an answer a standing permission gave.
    web_permission_auto: (op) => cards.showAutoAnswer(op),
    // {status, authMethods, message}: the agent starting, ready, failed or asking for sign-in.
    web_status: (op) => panels.onStatus(op),
    // {permissions}: the "always" answers the server remembers for this session.
    web_standing_permissions: (op) => panels.onStanding(op.permissions),
    // {checkpoints, restores}: the checkpoints the session's log noted (checkpoints.js).
    web_checkpoints: (op) => onCheckpoints(op),
    // {items: [{id, text, position, images, acp}]}: the prompts queued while a v1 turn runs.
    web_queue: (op) => to.promptQueue.show(op.items),
    // {}: the list of sessions changed (a session got its title).
    web_session: () => to.refreshSessions(),
  });
}
