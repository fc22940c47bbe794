//! The ACP method names, request fields and capability keys of the
//! client's typed calls (authentication, modes, config options, session
//! history) and of the client methods an agent calls (file system,
//! terminals), plus the prompt content-block types. Spelled here once for
//! the runtime (`spindle-protocol`), the reference agent and the front ends.
//!
//! Where the v2 draft renames a method, both names are here: v1
//! `authenticate` is v2 `auth/login`; v1 `session/set_mode` has no v2 form
//! (v2 modes are config options of category `mode`); v1 `session/load` is
//! v2 `session/resume` with `replayFrom: {"type": "start"}`. v2 has no
//! client file system or terminal methods. v1 `logout` is v2 `auth/logout`.

/// `initialize`.
pub const INITIALIZE: &str = "initialize";
/// v1 `authenticate` (params `{methodId}`).
pub const AUTHENTICATE: &str = "authenticate";
/// v2 `auth/login` (params `{methodId}`), the v2 name of `authenticate`.
pub const AUTH_LOGIN: &str = "auth/login";
/// v1 `logout` (unstable), the v1 name of `auth/logout`.
pub const LOGOUT: &str = "logout";
/// v2 `auth/logout`.
pub const AUTH_LOGOUT: &str = "auth/logout";
/// `session/new`.
pub const SESSION_NEW: &str = "session/new";
/// v1 `session/load` (replays the history as updates before answering).
pub const SESSION_LOAD: &str = "session/load";
/// `session/resume` (v1 behind `sessionCapabilities.resume`; v2 baseline).
pub const SESSION_RESUME: &str = "session/resume";
/// `session/list` (v1 behind `sessionCapabilities.list`; v2 baseline).
pub const SESSION_LIST: &str = "session/list";
/// `session/close`.
pub const SESSION_CLOSE: &str = "session/close";
/// `session/fork` (unstable; v1 behind `sessionCapabilities.fork`, v2
/// behind `session.fork`): a new session branching from an existing one.
pub const SESSION_FORK: &str = "session/fork";
/// `session/delete` (v1 behind `sessionCapabilities.delete`, v2 behind
/// `session.delete`): removes a session from `session/list`.
pub const SESSION_DELETE: &str = "session/delete";
/// v1 `session/set_mode` (params `{sessionId, modeId}`).
pub const SESSION_SET_MODE: &str = "session/set_mode";
/// `session/set_config_option` (params `{sessionId, configId, type?, value}`).
pub const SESSION_SET_CONFIG_OPTION: &str = "session/set_config_option";
/// `session/prompt`.
pub const SESSION_PROMPT: &str = "session/prompt";
/// `session/cancel` (a notification).
pub const SESSION_CANCEL: &str = "session/cancel";
/// `session/update` (a notification).
pub const SESSION_UPDATE: &str = "session/update";
/// `session/request_permission` (agent to client).
pub const SESSION_REQUEST_PERMISSION: &str = "session/request_permission";
/// `elicitation/create` (agent to client, unstable): ask the user for structured input, through
/// a form rendered from `requestedSchema` (`mode: "form"`) or a URL to visit (`mode: "url"`).
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `elicitation/complete` (agent to client, a notification, unstable): the URL elicitation
/// `elicitationId` is done.
pub const ELICITATION_COMPLETE: &str = "elicitation/complete";
/// `$/cancel_request` (a notification, either way): the sender gave up on
/// one of its requests (params `{requestId}`).
pub const CANCEL_REQUEST: &str = "$/cancel_request";

/// v1 `fs/read_text_file` (agent to client; params `{sessionId, path, line?, limit?}`).
pub const FS_READ_TEXT_FILE: &str = "fs/read_text_file";
/// v1 `fs/write_text_file` (agent to client; params `{sessionId, path, content}`).
pub const FS_WRITE_TEXT_FILE: &str = "fs/write_text_file";
/// v1 `terminal/create` (agent to client).
pub const TERMINAL_CREATE: &str = "terminal/create";
/// v1 `terminal/output` (agent to client).
pub const TERMINAL_OUTPUT: &str = "terminal/output";
/// v1 `terminal/wait_for_exit` (agent to client).
pub const TERMINAL_WAIT_FOR_EXIT: &str = "terminal/wait_for_exit";
/// v1 `terminal/kill` (agent to client).
pub const TERMINAL_KILL: &str = "terminal/kill";
/// v1 `terminal/release` (agent to client).
pub const TERMINAL_RELEASE: &str = "terminal/release";
/// The prefix every terminal method shares.
pub const TERMINAL_PREFIX: &str = "terminal/";

/// JSON-RPC error code ACP uses for "authentication required" (`auth_required`).
pub const AUTH_REQUIRED_CODE: i64 = -32000;
/// JSON-RPC error code ACP uses for "resource not found".
pub const RESOURCE_NOT_FOUND_CODE: i64 = -32002;
/// ACP's message for [`RESOURCE_NOT_FOUND_CODE`], which agents match on.
pub const RESOURCE_NOT_FOUND_MESSAGE: &str = "Resource not found";

/// Request and result fields of the typed calls.
pub mod fields {
    /// `sessionId`.
    pub const SESSION_ID: &str = "sessionId";
    /// `methodId` (authenticate / auth/login params; v2 auth method descriptors).
    pub const METHOD_ID: &str = "methodId";
    /// `id` (v1 auth method descriptors).
    pub const ID: &str = "id";
    /// `modeId`.
    pub const MODE_ID: &str = "modeId";
    /// `configId`.
    pub const CONFIG_ID: &str = "configId";
    /// `value`.
    pub const VALUE: &str = "value";
    /// `cwd`.
    pub const CWD: &str = "cwd";
    /// `cursor` (session/list params).
    pub const CURSOR: &str = "cursor";
    /// `nextCursor` (session/list result).
    pub const NEXT_CURSOR: &str = "nextCursor";
    /// `sessions` (session/list result).
    pub const SESSIONS: &str = "sessions";
    /// `title`.
    pub const TITLE: &str = "title";
    /// `updatedAt`.
    pub const UPDATED_AT: &str = "updatedAt";
    /// `name`.
    pub const NAME: &str = "name";
    /// `description`.
    pub const DESCRIPTION: &str = "description";
    /// `mcpServers`.
    pub const MCP_SERVERS: &str = "mcpServers";
    /// `additionalDirectories` (session/new, load, resume, fork params and
    /// `SessionInfo`): absolute workspace roots besides `cwd`.
    pub const ADDITIONAL_DIRECTORIES: &str = "additionalDirectories";
    /// `replayFrom` (v2 session/resume).
    pub const REPLAY_FROM: &str = "replayFrom";
    /// `authMethods` (initialize result).
    pub const AUTH_METHODS: &str = "authMethods";
    /// `configOptions`.
    pub const CONFIG_OPTIONS: &str = "configOptions";
    /// `path` (fs params).
    pub const PATH: &str = "path";
    /// `line` (fs/read_text_file params, 1-based).
    pub const LINE: &str = "line";
    /// `limit` (fs/read_text_file params, lines).
    pub const LIMIT: &str = "limit";
    /// `content` (fs/read_text_file result, fs/write_text_file params).
    pub const CONTENT: &str = "content";
    /// `terminalId`.
    pub const TERMINAL_ID: &str = "terminalId";
    /// `command` (terminal/create).
    pub const COMMAND: &str = "command";
    /// `args` (terminal/create).
    pub const ARGS: &str = "args";
    /// `env` (terminal/create).
    pub const ENV: &str = "env";
    /// `outputByteLimit` (terminal/create).
    pub const OUTPUT_BYTE_LIMIT: &str = "outputByteLimit";
    /// `output` (terminal/output result).
    pub const OUTPUT: &str = "output";
    /// `truncated` (terminal/output result).
    pub const TRUNCATED: &str = "truncated";
    /// `exitStatus` (terminal/output result).
    pub const EXIT_STATUS: &str = "exitStatus";
    /// `exitCode`.
    pub const EXIT_CODE: &str = "exitCode";
    /// `signal`.
    pub const SIGNAL: &str = "signal";
}

/// Capability keys of the `initialize` exchange.
pub mod capabilities {
    /// v1 `agentCapabilities`.
    pub const V1_AGENT: &str = "agentCapabilities";
    /// v1 `clientCapabilities`.
    pub const V1_CLIENT: &str = "clientCapabilities";
    /// v2 `capabilities` (both sides).
    pub const V2: &str = "capabilities";
    /// v1 `loadSession` (agent).
    pub const LOAD_SESSION: &str = "loadSession";
    /// v1 `promptCapabilities` (agent).
    pub const PROMPT_CAPABILITIES: &str = "promptCapabilities";
    /// v1 `sessionCapabilities` (agent).
    pub const SESSION_CAPABILITIES: &str = "sessionCapabilities";
    /// v2 `session` (agent): present means the baseline session methods,
    /// `session/list` and `session/resume` included.
    pub const SESSION: &str = "session";
    /// v2 `session.prompt` (agent).
    pub const PROMPT: &str = "prompt";
    /// `list` (v1 `sessionCapabilities.list`).
    pub const LIST: &str = "list";
    /// `resume` (v1 `sessionCapabilities.resume`).
    pub const RESUME: &str = "resume";
    /// `close` (v1 `sessionCapabilities.close`; v2 baseline).
    pub const CLOSE: &str = "close";
    /// `fork` (v1 `sessionCapabilities.fork`, v2 `session.fork`; unstable).
    pub const FORK: &str = "fork";
    /// `delete` (v1 `sessionCapabilities.delete`, v2 `session.delete`).
    pub const DELETE: &str = "delete";
    /// `additionalDirectories` (v1 `sessionCapabilities.additionalDirectories`,
    /// v2 `session.additionalDirectories`).
    pub const ADDITIONAL_DIRECTORIES: &str = "additionalDirectories";
    /// `auth` (agent: v1 `agentCapabilities.auth`, which holds `logout`).
    pub const AUTH: &str = "auth";
    /// `logout` (v1 `agentCapabilities.auth.logout`; v2 has no marker: a
    /// non-empty `authMethods` means `auth/logout` is supported).
    pub const LOGOUT: &str = "logout";
    /// `image` (prompt capabilities).
    pub const IMAGE: &str = "image";
    /// `audio` (prompt capabilities).
    pub const AUDIO: &str = "audio";
    /// `embeddedContext` (prompt capabilities).
    pub const EMBEDDED_CONTEXT: &str = "embeddedContext";
    /// v1 `fs` (client).
    pub const FS: &str = "fs";
    /// v1 `fs.readTextFile` (client).
    pub const READ_TEXT_FILE: &str = "readTextFile";
    /// v1 `fs.writeTextFile` (client).
    pub const WRITE_TEXT_FILE: &str = "writeTextFile";
    /// v1 `terminal` (client).
    pub const TERMINAL: &str = "terminal";
    /// `elicitation` (client, v1 `clientCapabilities` and v2 `capabilities`): `{form: {}, url: {}}`.
    pub const ELICITATION: &str = "elicitation";
    /// `form` (elicitation capability and mode).
    pub const ELICITATION_FORM: &str = "form";
    /// `url` (elicitation capability and mode).
    pub const ELICITATION_URL: &str = "url";
}

/// The fields and actions of `elicitation/create` and its answer.
pub mod elicitation {
    /// `mode` (`form`, `url`, or a custom/future mode).
    pub const MODE: &str = "mode";
    /// `message`.
    pub const MESSAGE: &str = "message";
    /// `requestedSchema` (form mode).
    pub const REQUESTED_SCHEMA: &str = "requestedSchema";
    /// `elicitationId` (url mode, and `elicitation/complete`).
    pub const ELICITATION_ID: &str = "elicitationId";
    /// `url` (url mode).
    pub const URL: &str = "url";
    /// `action` (the answer).
    pub const ACTION: &str = "action";
    /// `content` (an `accept` answer's values, by property name).
    pub const CONTENT: &str = "content";
    /// The answer `accept`.
    pub const ACCEPT: &str = "accept";
    /// The answer `decline`.
    pub const DECLINE: &str = "decline";
    /// The answer `cancel`.
    pub const CANCEL: &str = "cancel";
}

/// Prompt content-block types and their fields.
pub mod blocks {
    /// `text`.
    pub const TEXT: &str = "text";
    /// `image` (`{type, mimeType, data}`; needs the `image` prompt capability).
    pub const IMAGE: &str = "image";
    /// `audio` (needs the `audio` prompt capability).
    pub const AUDIO: &str = "audio";
    /// `resource_link` (`{type, uri, name, mimeType?, size?}`; always allowed).
    pub const RESOURCE_LINK: &str = "resource_link";
    /// `resource`, an embedded resource (`{type, resource: {uri, mimeType?, text}}`;
    /// needs the `embeddedContext` prompt capability).
    pub const RESOURCE: &str = "resource";
    /// `terminal` (tool-call content embedding a client terminal: `{type, terminalId}`).
    pub const TERMINAL: &str = "terminal";
    /// `mimeType`.
    pub const MIME_TYPE: &str = "mimeType";
    /// `data` (base64).
    pub const DATA: &str = "data";
    /// `uri`.
    pub const URI: &str = "uri";
    /// `size`.
    pub const SIZE: &str = "size";
}

/// `session/request_permission` option kinds (`PermissionOption.kind`).
pub mod permission_kinds {
    /// `allow_once`: allow this time.
    pub const ALLOW_ONCE: &str = "allow_once";
    /// `allow_always`: allow, and remember the choice.
    pub const ALLOW_ALWAYS: &str = "allow_always";
    /// `reject_once`: reject this time.
    pub const REJECT_ONCE: &str = "reject_once";
    /// `reject_always`: reject, and remember the choice.
    pub const REJECT_ALWAYS: &str = "reject_always";
}
