//! Shape conversions of the handshake and session-setup messages: initialize,
//! session responses (modes <-> config options), MCP servers, commands.
//! Rare messages, so they work on `serde_json::Value`.

use serde_json::{Map, Value, json};

use spindle_wire::extensions::{EXTENSIONS_KEY, Extensions};
use spindle_wire::meta::{META_KEY, SPINDLE_META_KEY};

/// Name and version the bridge reports when a v1 peer sent no `*Info`.
pub(crate) fn bridge_info(role: &str) -> Value {
    json!({
        "name": format!("spindle-bridge ({role})"),
        "version": env!("CARGO_PKG_VERSION"),
    })
}

fn marker(on: bool) -> Option<Value> {
    on.then(|| json!({}))
}

fn is_marker(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Object(_)) | Some(Value::Bool(true)))
}

/// Writes `_meta.spindle.extensions` (merged with any other `_meta`).
fn set_extensions(params: &mut Map<String, Value>, ext: Extensions) {
    let names = ext.names();
    if names.is_empty() {
        return;
    }
    let meta = params
        .entry(META_KEY)
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    let spindle = meta
        .as_object_mut()
        .map(|m| m.entry(SPINDLE_META_KEY).or_insert_with(|| json!({})));
    if let Some(spindle) = spindle {
        if !spindle.is_object() {
            *spindle = json!({});
        }
        spindle[EXTENSIONS_KEY] = json!(names);
    }
}

/// v2 client initialize params -> v1 agent initialize params.
pub(crate) fn init_request_v2_to_v1(
    mut p: Map<String, Value>,
    agent_ext: Extensions,
) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("protocolVersion".into(), 1.into());
    if let Some(info) = p.remove("info") {
        out.insert("clientInfo".into(), info);
    }
    let caps = p.remove("capabilities").unwrap_or(Value::Null);
    let mut v1caps = Map::new();
    // v2 clients have no fs/terminal methods: the v1 agent must not use them.
    v1caps.insert(
        "fs".into(),
        json!({"readTextFile": false, "writeTextFile": false}),
    );
    v1caps.insert("terminal".into(), false.into());
    // Compaction updates pass through unchanged to a v2 client.
    v1caps.insert("session".into(), json!({"compaction": {}}));
    for key in ["elicitation", "positionEncodings"] {
        if let Some(v) = caps.get(key).filter(|v| !v.is_null()) {
            v1caps.insert(key.into(), v.clone());
        }
    }
    if is_marker(caps["auth"].get("terminal")) {
        v1caps.insert("auth".into(), json!({"terminal": true}));
    }
    out.insert("clientCapabilities".into(), Value::Object(v1caps));
    if let Some(meta) = p.remove(META_KEY) {
        out.insert(META_KEY.into(), meta);
    }
    set_extensions(&mut out, agent_ext);
    out
}

/// v1 client initialize params -> v2 agent initialize params.
pub(crate) fn init_request_v1_to_v2(mut p: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("protocolVersion".into(), 2.into());
    let info = match p.remove("clientInfo") {
        Some(v) if v.get("name").is_some() && v.get("version").is_some() => v,
        _ => bridge_info("v1 client"),
    };
    out.insert("info".into(), info);
    let caps = p.remove("clientCapabilities").unwrap_or(Value::Null);
    let mut v2caps = Map::new();
    for key in ["elicitation", "positionEncodings"] {
        if let Some(v) = caps.get(key).filter(|v| !v.is_null()) {
            v2caps.insert(key.into(), v.clone());
        }
    }
    if caps["auth"]["terminal"] == true {
        v2caps.insert("auth".into(), json!({"terminal": {}}));
    }
    out.insert("capabilities".into(), Value::Object(v2caps));
    if let Some(meta) = p.remove(META_KEY) {
        out.insert(META_KEY.into(), meta);
    }
    out
}

/// v1 agent initialize result -> v2 client initialize result, and the
/// capabilities it has no v2 form for (or the bridge does not translate).
pub(crate) fn init_response_v1_to_v2(
    mut r: Map<String, Value>,
) -> (Map<String, Value>, Vec<&'static str>) {
    let mut dropped = Vec::new();
    let mut out = Map::new();
    out.insert("protocolVersion".into(), 2.into());
    let info = match r.remove("agentInfo") {
        Some(v) if v.get("name").is_some() && v.get("version").is_some() => v,
        _ => bridge_info("v1 agent"),
    };
    out.insert("info".into(), info);
    let caps = r.remove("agentCapabilities").unwrap_or(Value::Null);
    let prompt = &caps["promptCapabilities"];
    let mut prompt2 = Map::new();
    for key in ["image", "audio", "embeddedContext"] {
        if let Some(m) = marker(prompt[key] == true) {
            prompt2.insert(key.into(), m);
        }
    }
    let mcp = &caps["mcpCapabilities"];
    let mut mcp2 = Map::new();
    mcp2.insert("stdio".into(), json!({}));
    for key in ["http", "acp"] {
        if let Some(m) = marker(mcp[key] == true) {
            mcp2.insert(key.into(), m);
        }
    }
    if mcp["sse"] == true {
        dropped.push("mcpCapabilities.sse (v2 has no SSE transport)");
    }
    let mut session = Map::new();
    session.insert("prompt".into(), Value::Object(prompt2));
    session.insert("mcp".into(), Value::Object(mcp2));
    for key in ["delete", "additionalDirectories", "fork"] {
        if is_marker(caps["sessionCapabilities"].get(key)) {
            session.insert(key.into(), json!({}));
        }
    }
    let mut v2caps = Map::new();
    v2caps.insert("session".into(), Value::Object(session));
    copy_shared_agent_caps(&caps, &mut v2caps, &mut dropped);
    out.insert("capabilities".into(), Value::Object(v2caps));
    // v2 advertises auth/logout by a non-empty authMethods list alone.
    let has_methods = matches!(r.get("authMethods"), Some(Value::Array(m)) if !m.is_empty());
    if is_marker(caps["auth"].get("logout")) && !has_methods {
        dropped
            .push("auth.logout (v2 advertises logout only with authMethods, and there are none)");
    }
    if let Some(Value::Array(methods)) = r.remove("authMethods") {
        let methods: Vec<Value> = methods
            .into_iter()
            .map(|mut m| {
                if let Some(obj) = m.as_object_mut() {
                    if let Some(id) = obj.remove("id") {
                        obj.insert("methodId".into(), id);
                    }
                    obj.entry("type").or_insert_with(|| "agent".into());
                }
                m
            })
            .collect();
        if !methods.is_empty() {
            out.insert("authMethods".into(), Value::Array(methods));
        }
    }
    if let Some(meta) = r.remove(META_KEY) {
        out.insert(META_KEY.into(), meta);
    }
    (out, dropped)
}

/// The agent capabilities of the same shape in both versions (`providers`,
/// `positionEncoding`) are copied; `nes` is not: the bridge does not
/// translate the `nes/*` methods, whose fields differ between versions.
fn copy_shared_agent_caps(
    caps: &Value,
    out: &mut Map<String, Value>,
    dropped: &mut Vec<&'static str>,
) {
    for key in ["providers", "positionEncoding"] {
        if let Some(v) = caps.get(key).filter(|v| !v.is_null()) {
            out.insert(key.into(), v.clone());
        }
    }
    if caps.get("nes").is_some_and(|v| !v.is_null()) {
        dropped.push("nes (the bridge does not translate nes/* methods)");
    }
}

/// The client capabilities the bridge does not carry to the agent: `nes`
/// (both ways), and a v1 client's file system and terminal (v2 has none).
pub(crate) fn unbridged_client_caps(caps: &Value, client_version: u16) -> Vec<&'static str> {
    let mut dropped = Vec::new();
    if caps.get("nes").is_some_and(|v| !v.is_null()) {
        dropped.push("nes (the bridge does not translate nes/* methods)");
    }
    if client_version == 1 {
        let fs = &caps["fs"];
        if fs["readTextFile"] == true || fs["writeTextFile"] == true {
            dropped.push("fs (v2 agents have no client file system methods)");
        }
        if caps["terminal"] == true {
            dropped.push("terminal (v2 agents have no client terminal methods)");
        }
    }
    dropped
}

/// v2 agent initialize result -> v1 client initialize result, and the
/// capabilities it has no v1 form for (or the bridge does not translate).
pub(crate) fn init_response_v2_to_v1(
    mut r: Map<String, Value>,
) -> (Map<String, Value>, Vec<&'static str>) {
    let mut dropped = Vec::new();
    let mut out = Map::new();
    out.insert("protocolVersion".into(), 1.into());
    let caps = r.remove("capabilities").unwrap_or(Value::Null);
    let session = &caps["session"];
    let has_session = session.is_object();
    let prompt = &session["prompt"];
    let mcp = &session["mcp"];
    let mut v1 = Map::new();
    // session/load is served by session/resume with replayFrom start.
    v1.insert("loadSession".into(), has_session.into());
    v1.insert(
        "promptCapabilities".into(),
        json!({
            "image": is_marker(prompt.get("image")),
            "audio": is_marker(prompt.get("audio")),
            "embeddedContext": is_marker(prompt.get("embeddedContext")),
        }),
    );
    let mut mcp1 = json!({
        "http": is_marker(mcp.get("http")),
        "sse": false,
    });
    if is_marker(mcp.get("acp")) {
        mcp1["acp"] = true.into();
    }
    v1.insert("mcpCapabilities".into(), mcp1);
    let mut sc = Map::new();
    if has_session {
        for key in ["list", "resume", "close"] {
            sc.insert(key.into(), json!({}));
        }
        for key in ["delete", "additionalDirectories", "fork"] {
            if is_marker(session.get(key)) {
                sc.insert(key.into(), json!({}));
            }
        }
    }
    v1.insert("sessionCapabilities".into(), Value::Object(sc));
    // v2 advertises auth/login and auth/logout by a non-empty authMethods list.
    if matches!(r.get("authMethods"), Some(Value::Array(m)) if !m.is_empty()) {
        v1.insert("auth".into(), json!({"logout": {}}));
    }
    copy_shared_agent_caps(&caps, &mut v1, &mut dropped);
    out.insert("agentCapabilities".into(), Value::Object(v1));
    if let Some(info) = r.remove("info") {
        out.insert("agentInfo".into(), info);
    }
    if let Some(Value::Array(methods)) = r.remove("authMethods") {
        let methods: Vec<Value> = methods
            .into_iter()
            .map(|mut m| {
                if let Some(obj) = m.as_object_mut()
                    && let Some(id) = obj.remove("methodId")
                {
                    obj.insert("id".into(), id);
                }
                m
            })
            .collect();
        out.insert("authMethods".into(), Value::Array(methods));
    }
    if let Some(meta) = r.remove(META_KEY) {
        out.insert(META_KEY.into(), meta);
    }
    (out, dropped)
}

fn rename_key(obj: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = obj.remove(from) {
        obj.insert(to.into(), v);
    }
}

/// Renames option and group ids between versions (`id`<->`configId`,
/// `group`<->`groupId`).
fn convert_option(mut option: Value, to_v2: bool) -> Value {
    let (id_from, id_to, g_from, g_to) = if to_v2 {
        ("id", "configId", "group", "groupId")
    } else {
        ("configId", "id", "groupId", "group")
    };
    if let Some(obj) = option.as_object_mut() {
        rename_key(obj, id_from, id_to);
        if let Some(Value::Array(items)) = obj.get_mut("options") {
            for item in items {
                if let Some(item) = item.as_object_mut()
                    && item.contains_key("options")
                {
                    rename_key(item, g_from, g_to);
                }
            }
        }
    }
    option
}

pub(crate) fn config_options_v1_to_v2(options: &[Value]) -> Vec<Value> {
    options
        .iter()
        .cloned()
        .map(|o| convert_option(o, true))
        .collect()
}

pub(crate) fn config_options_v2_to_v1(options: &[Value]) -> Vec<Value> {
    options
        .iter()
        .cloned()
        .map(|o| convert_option(o, false))
        .collect()
}

/// The v2 config option standing for v1 `modes`.
pub(crate) fn mode_option(modes: &Value, config_id: &str) -> Option<Value> {
    let current = modes.get("currentModeId")?.as_str()?;
    let options: Vec<Value> = modes
        .get("availableModes")?
        .as_array()?
        .iter()
        .filter_map(|m| {
            let mut o = Map::new();
            o.insert("value".into(), m.get("id")?.clone());
            o.insert("name".into(), m.get("name")?.clone());
            if let Some(d) = m.get("description").filter(|d| d.is_string()) {
                o.insert("description".into(), d.clone());
            }
            Some(Value::Object(o))
        })
        .collect();
    Some(json!({
        "type": "select",
        "configId": config_id,
        "name": "Mode",
        "category": "mode",
        "currentValue": current,
        "options": options,
    }))
}

/// v1 `modes` derived from the (v2-shaped) option with category `mode`:
/// (modes, the option's configId).
pub(crate) fn modes_from_options(options: &[Value]) -> Option<(Value, String)> {
    let option = options
        .iter()
        .find(|o| o["category"] == "mode" && o["type"] == "select")?;
    let config_id = option["configId"].as_str()?.to_owned();
    let current = option["currentValue"].as_str()?;
    let mut modes = Vec::new();
    for item in option["options"].as_array()? {
        // Grouped options: flatten the groups.
        let flat: Vec<&Value> = match item.get("options").and_then(Value::as_array) {
            Some(inner) => inner.iter().collect(),
            None => vec![item],
        };
        for o in flat {
            let mut m = Map::new();
            m.insert("id".into(), o.get("value")?.clone());
            m.insert("name".into(), o.get("name")?.clone());
            if let Some(d) = o.get("description").filter(|d| d.is_string()) {
                m.insert("description".into(), d.clone());
            }
            modes.push(Value::Object(m));
        }
    }
    Some((
        json!({"currentModeId": current, "availableModes": modes}),
        config_id,
    ))
}

/// v2 MCP servers (tagged, `type:"stdio"` mandatory) -> v1 (stdio untagged;
/// `headers` required for http). Returns the servers of a type v1 lacks
/// (`name (type)`), which are removed.
pub(crate) fn mcp_servers_v2_to_v1(servers: &mut Value) -> Vec<String> {
    let mut removed = Vec::new();
    if let Some(list) = servers.as_array_mut() {
        list.retain(|s| {
            let ty = s.get("type").and_then(Value::as_str).unwrap_or("");
            let known = matches!(ty, "stdio" | "http" | "acp");
            if !known {
                let name = s.get("name").and_then(Value::as_str).unwrap_or("?");
                removed.push(format!("{name} ({ty})"));
            }
            known
        });
        for s in list {
            let Some(obj) = s.as_object_mut() else {
                continue;
            };
            match obj.get("type").and_then(Value::as_str) {
                Some("stdio") => {
                    obj.remove("type");
                    obj.entry("args").or_insert_with(|| json!([]));
                    obj.entry("env").or_insert_with(|| json!([]));
                }
                Some("http") => {
                    obj.entry("headers").or_insert_with(|| json!([]));
                }
                _ => {}
            }
        }
    }
    removed
}

/// v1 MCP servers -> v2. Returns the number of SSE servers removed (v2 has
/// no SSE transport).
pub(crate) fn mcp_servers_v1_to_v2(servers: &mut Value) -> usize {
    let mut dropped = 0;
    if let Some(list) = servers.as_array_mut() {
        list.retain(|s| {
            let sse = s.get("type").and_then(Value::as_str) == Some("sse");
            dropped += usize::from(sse);
            !sse
        });
        for s in list {
            if let Some(obj) = s.as_object_mut()
                && !obj.contains_key("type")
            {
                obj.insert("type".into(), "stdio".into());
            }
        }
    }
    dropped
}

/// v1 commands -> v2: each entry gains `type:"command"`, its input
/// `type:"text"`.
pub(crate) fn commands_v1_to_v2(commands: &mut Value) {
    for c in commands.as_array_mut().into_iter().flatten() {
        if let Some(obj) = c.as_object_mut() {
            obj.entry("type").or_insert_with(|| "command".into());
            if let Some(input) = obj.get_mut("input").and_then(Value::as_object_mut) {
                input.entry("type").or_insert_with(|| "text".into());
            }
        }
    }
}

/// v2 commands -> v1. Returns the entries with no v1 form (unknown command
/// or input types), which are removed.
pub(crate) fn commands_v2_to_v1(commands: &mut Value) -> Vec<String> {
    let mut rejected = Vec::new();
    if let Some(list) = commands.as_array_mut() {
        list.retain(|c| {
            let ty = c.get("type").and_then(Value::as_str).unwrap_or("command");
            let input_ty = c
                .get("input")
                .and_then(|i| i.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("text");
            let ok = ty == "command" && input_ty == "text";
            if !ok {
                rejected.push(format!(
                    "command {} (type {ty}, input {input_ty})",
                    c.get("name").and_then(Value::as_str).unwrap_or("?")
                ));
            }
            ok
        });
        for c in list {
            if let Some(obj) = c.as_object_mut() {
                obj.remove("type");
                if let Some(input) = obj.get_mut("input").and_then(Value::as_object_mut) {
                    input.remove("type");
                }
            }
        }
    }
    rejected
}

/// v1 diff `{path, oldText?, newText}` -> v2 diff `{changes, patch}` with a
/// whole-file git patch, so no text is lost.
pub(crate) fn diff_v1_to_v2(item: &Map<String, Value>) -> Value {
    let path = item.get("path").and_then(Value::as_str).unwrap_or("");
    let old = item.get("oldText").and_then(Value::as_str);
    let new = item.get("newText").and_then(Value::as_str).unwrap_or("");
    let operation = if old.is_none() { "add" } else { "modify" };
    let mut patch = String::new();
    patch.push_str(&format!("diff --git {path} {path}\n"));
    if old.is_none() {
        patch.push_str("new file mode 100644\n--- /dev/null\n");
    } else {
        patch.push_str(&format!("--- {path}\n"));
    }
    patch.push_str(&format!("+++ {path}\n"));
    let old_lines: Vec<&str> = old.map(|o| o.lines().collect()).unwrap_or_default();
    let new_lines: Vec<&str> = new.lines().collect();
    let old_start = usize::from(!old_lines.is_empty());
    let new_start = usize::from(!new_lines.is_empty());
    patch.push_str(&format!(
        "@@ -{old_start},{} +{new_start},{} @@\n",
        old_lines.len(),
        new_lines.len()
    ));
    for l in &old_lines {
        patch.push('-');
        patch.push_str(l);
        patch.push('\n');
    }
    for l in &new_lines {
        patch.push('+');
        patch.push_str(l);
        patch.push('\n');
    }
    let mut out = Map::new();
    out.insert("type".into(), "diff".into());
    out.insert(
        "changes".into(),
        json!([{ "operation": operation, "path": path }]),
    );
    out.insert(
        "patch".into(),
        json!({ "format": "git_patch", "text": patch }),
    );
    if let Some(meta) = item.get(META_KEY) {
        out.insert(META_KEY.into(), meta.clone());
    }
    Value::Object(out)
}

/// v1 patch semantics: `null` = unchanged; v2: `null` = clear. Drop nulls.
fn strip_nulls(obj: &mut Map<String, Value>) {
    obj.retain(|_, v| !v.is_null());
}

fn tool_content_v1_to_v2(content: &mut Value) {
    for item in content.as_array_mut().into_iter().flatten() {
        if item["type"] == "diff"
            && let Some(obj) = item.as_object()
            && obj.contains_key("newText")
        {
            *item = diff_v1_to_v2(obj);
        }
    }
}

/// A v1 `tool_call` / `tool_call_update` / permission `toolCall` as a v2
/// `tool_call_update` body.
pub(crate) fn tool_v1_to_v2(obj: &mut Map<String, Value>) {
    strip_nulls(obj);
    if let Some(content) = obj.get_mut("content") {
        tool_content_v1_to_v2(content);
    }
}
