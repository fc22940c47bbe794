//! Slash commands and Tab completion: the agent's commands (latest
//! `available_commands_update`) and Spindle's own, with their input hints;
//! `@path` completion of files under the working directory (listed by the
//! caller, through the host, scoped like reads). No I/O here.

use serde_json::Value;

use super::controls::Controls;

/// A command the chat knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandInfo {
    /// Without the slash.
    pub name: String,
    /// What it does.
    pub description: String,
    /// `input.hint`: what to type after it.
    pub hint: Option<String>,
    /// Spindle's own (handled by the chat, never sent to the agent).
    pub own: bool,
}

/// Spindle's own commands: name, hint, description.
pub const OWN_COMMANDS: [(&str, &str, &str); 13] = [
    (
        "mode",
        "[mode id]",
        "list the session modes, or switch to one",
    ),
    ("model", "[model]", "list the models, or pick one"),
    (
        "config",
        "[option id [value]]",
        "list the config options, or set one",
    ),
    (
        "auth",
        "[method id]",
        "list the agent's sign-in methods, or sign in with one",
    ),
    (
        "fork",
        "",
        "continue in a new session branching from this one (session/fork)",
    ),
    (
        "delete",
        "",
        "delete this session from the agent (session/delete; asks y/N), then leave",
    ),
    ("logout", "", "log out of the agent (logout / auth/logout)"),
    (
        "checkpoints",
        "",
        "list the checkpoints taken before each turn (the folder's files)",
    ),
    (
        "undo",
        "[turn]",
        "put the files back as they were before the last turn (or turn N); shows the diff, asks y/N",
    ),
    (
        "queue",
        "[edit N TEXT | drop N]",
        "list the lines typed while a turn runs (sent when it ends, in order), or edit or drop one",
    ),
    (
        "permissions",
        "[forget N]",
        "list the standing \"always\" answers, or drop one",
    ),
    (
        "quit",
        "",
        "leave the chat (prints how to resume the session)",
    ),
    ("exit", "", "leave the chat (as /quit)"),
];

/// Spindle's commands followed by the agent's (`commands`: the
/// `availableCommands` array as sent); an agent command named like one of
/// Spindle's is shadowed.
pub fn catalogue(agent_commands: Option<&Value>) -> Vec<CommandInfo> {
    let mut list: Vec<CommandInfo> = OWN_COMMANDS
        .iter()
        .map(|(name, hint, description)| CommandInfo {
            name: (*name).to_owned(),
            description: (*description).to_owned(),
            hint: Some((*hint).to_owned()),
            own: true,
        })
        .collect();
    for command in agent_commands
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = command.get("name").and_then(Value::as_str) else {
            continue;
        };
        let name = name.trim_start_matches('/');
        if name.is_empty() || list.iter().any(|c| c.name == name) {
            continue;
        }
        list.push(CommandInfo {
            name: name.to_owned(),
            description: command
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
            hint: command
                .get("input")
                .and_then(|i| i.get("hint"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            own: false,
        });
    }
    list
}

/// `/name rest` split; `None` when `line` is not a slash command.
pub fn split_command(line: &str) -> Option<(&str, &str)> {
    let body = line.strip_prefix('/')?;
    let (name, rest) = body.split_once(char::is_whitespace).unwrap_or((body, ""));
    if name.is_empty() {
        return None;
    }
    Some((name, rest.trim()))
}

/// The result of a Tab.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Completion {
    /// The new line, when it changed.
    pub line: Option<String>,
    /// Lines to show under the input (candidates, or why there are none).
    pub shown: Vec<String>,
}

/// Candidates listed after a Tab before the rest are counted.
const SHOWN_CANDIDATES: usize = 12;

/// Lists the paths that start with a typed mention prefix (or says why not).
pub type PathLister<'a> = &'a dyn Fn(&str) -> Result<Vec<String>, String>;

/// Completes `line`: a command name, an argument of Spindle's commands, or
/// the `@path` it ends with (`paths` lists the candidates).
pub fn complete(
    line: &str,
    commands: &[CommandInfo],
    controls: &Controls,
    paths: PathLister<'_>,
) -> Completion {
    let last_word_start = line.rfind(char::is_whitespace).map_or(0, |i| i + 1);
    let last_word = &line[last_word_start..];
    if let Some(prefix) = last_word.strip_prefix('@') {
        return complete_path(line, last_word_start, prefix, paths);
    }
    let Some(body) = line.strip_prefix('/') else {
        return Completion::default();
    };
    if !body.contains(char::is_whitespace) {
        let matches: Vec<&CommandInfo> = commands
            .iter()
            .filter(|c| c.name.starts_with(body))
            .collect();
        return match matches.as_slice() {
            [] => Completion {
                line: None,
                shown: vec![format!("no command starts with /{body}")],
            },
            [one] => Completion {
                line: Some(format!("/{} ", one.name)),
                shown: Vec::new(),
            },
            many => {
                let common = common_prefix(many.iter().map(|c| c.name.as_str()));
                let mut shown: Vec<String> = many
                    .iter()
                    .take(SHOWN_CANDIDATES)
                    .map(|c| format!("  /{}  {}", c.name, c.description))
                    .collect();
                if many.len() > SHOWN_CANDIDATES {
                    shown.push(format!("  ... and {} more", many.len() - SHOWN_CANDIDATES));
                }
                Completion {
                    line: (common.len() > body.len()).then(|| format!("/{common}")),
                    shown,
                }
            }
        };
    }
    // An argument of one of Spindle's commands.
    let Some((name, rest)) = split_command(line) else {
        return Completion::default();
    };
    if !commands.iter().any(|c| c.own && c.name == name) {
        return Completion::default();
    }
    let words: Vec<&str> = rest.split_whitespace().collect();
    let typing_new_word = line.ends_with(char::is_whitespace);
    let (first_arg, prefix) = match (words.as_slice(), typing_new_word) {
        ([], _) => (None, ""),
        ([w], false) => (None, *w),
        ([w], true) => (Some(*w), ""),
        ([w, v], false) => (Some(*w), *v),
        _ => return Completion::default(),
    };
    let values: Vec<String> = controls
        .completions(name, first_arg)
        .into_iter()
        .filter(|v| v.starts_with(prefix))
        .collect();
    let head = &line[..line.len() - prefix.len()];
    match values.as_slice() {
        [] => Completion {
            line: None,
            shown: vec!["nothing to complete".to_owned()],
        },
        [one] => Completion {
            line: Some(format!("{head}{one} ")),
            shown: Vec::new(),
        },
        many => {
            let common = common_prefix(many.iter().map(String::as_str));
            Completion {
                line: (common.len() > prefix.len()).then(|| format!("{head}{common}")),
                shown: vec![format!("  {}", many.join("  "))],
            }
        }
    }
}

/// While a command name is typed (`/na`, no space yet): a line per command
/// it may become, or why there is none; `None` for any other text.
pub fn matching_commands(line: &str, commands: &[CommandInfo]) -> Option<Vec<String>> {
    let body = line.strip_prefix('/')?;
    if body.contains(char::is_whitespace) {
        return None;
    }
    let matches: Vec<&CommandInfo> = commands
        .iter()
        .filter(|c| c.name.starts_with(body))
        .collect();
    if matches.is_empty() {
        return Some(vec![format!("no command starts with /{body}")]);
    }
    let mut shown: Vec<String> = matches
        .iter()
        .take(SHOWN_CANDIDATES)
        .map(|c| format!("  /{}  {}", c.name, c.description))
        .collect();
    if matches.len() > SHOWN_CANDIDATES {
        shown.push(format!(
            "  ... and {} more",
            matches.len() - SHOWN_CANDIDATES
        ));
    }
    Some(shown)
}

/// The hint line for the command being typed (`/name hint — description`).
pub fn hint_for(line: &str, commands: &[CommandInfo]) -> Option<String> {
    let (name, _) = split_command(line)?;
    if !line.contains(char::is_whitespace) {
        return None;
    }
    let command = commands.iter().find(|c| c.name == name)?;
    Some(match &command.hint {
        Some(hint) => format!("  /{} {hint}  ({})", command.name, command.description),
        None => format!("  /{}  ({})", command.name, command.description),
    })
}

fn common_prefix<'a>(mut words: impl Iterator<Item = &'a str>) -> String {
    let Some(first) = words.next() else {
        return String::new();
    };
    let mut prefix = first.to_owned();
    for word in words {
        let len = prefix
            .char_indices()
            .zip(word.chars())
            .take_while(|((_, a), b)| a == b)
            .last()
            .map_or(0, |((i, a), _)| i + a.len_utf8());
        prefix.truncate(len);
    }
    prefix
}

/// `@dir/pre` completed from what `paths` lists (relative paths,
/// directories ending with `/`).
fn complete_path(line: &str, word_start: usize, typed: &str, paths: PathLister<'_>) -> Completion {
    let names = match paths(typed) {
        Ok(names) => names,
        Err(why) => {
            return Completion {
                line: None,
                shown: vec![why],
            };
        }
    };
    let head = &line[..word_start];
    match names.as_slice() {
        [] => Completion {
            line: None,
            shown: vec![format!("no file matches @{typed}")],
        },
        [one] => {
            let end = if one.ends_with('/') { "" } else { " " };
            Completion {
                line: Some(format!("{head}@{one}{end}")),
                shown: Vec::new(),
            }
        }
        many => {
            let common = common_prefix(many.iter().map(String::as_str));
            let mut shown: Vec<String> = many
                .iter()
                .take(SHOWN_CANDIDATES)
                .map(|n| format!("  @{n}"))
                .collect();
            if many.len() > SHOWN_CANDIDATES {
                shown.push(format!("  ... and {} more", many.len() - SHOWN_CANDIDATES));
            }
            Completion {
                line: (common.len() > typed.len()).then(|| format!("{head}@{common}")),
                shown,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn commands() -> Vec<CommandInfo> {
        catalogue(Some(&json!([
            {"name": "scenario", "description": "Run a scenario", "input": {"hint": "plain | refine"}},
            {"name": "stream", "description": "Stream N updates"},
            {"name": "mode", "description": "the agent's own mode command"}
        ])))
    }

    #[test]
    fn completes_command_names_from_both_lists() {
        let c = commands();
        let controls = Controls::default();
        let root: PathLister<'_> = &|_| Ok(Vec::new());
        assert_eq!(
            complete("/sc", &c, &controls, root).line.as_deref(),
            Some("/scenario ")
        );
        let many = complete("/s", &c, &controls, root);
        assert_eq!(many.line, None);
        assert_eq!(many.shown.len(), 2);
        let own = complete("/mo", &c, &controls, root);
        assert_eq!(own.line.as_deref(), Some("/mode"));
        // The agent's "mode" is shadowed by Spindle's.
        assert_eq!(c.iter().filter(|x| x.name == "mode").count(), 1);
        assert_eq!(
            complete("/zz", &c, &controls, root).shown,
            ["no command starts with /zz"]
        );
        assert_eq!(
            complete("hello", &c, &controls, root),
            Completion::default()
        );
    }

    #[test]
    fn completes_own_arguments_and_shows_hints() {
        let c = commands();
        let controls = Controls::from_session_result(&json!({"modes": {"currentModeId": "default",
            "availableModes": [{"id": "default", "name": "D"}, {"id": "plan", "name": "P"}]}}));
        let root: PathLister<'_> = &|_| Ok(Vec::new());
        assert_eq!(
            complete("/mode p", &c, &controls, root).line.as_deref(),
            Some("/mode plan ")
        );
        assert_eq!(
            complete("/mode ", &c, &controls, root).shown,
            ["  default  plan"]
        );
        assert_eq!(
            hint_for("/scenario ", &c).as_deref(),
            Some("  /scenario plain | refine  (Run a scenario)")
        );
        assert_eq!(hint_for("/scenario", &c), None);
        assert_eq!(split_command("/config a b"), Some(("config", "a b")));
        assert_eq!(split_command("/ x"), None);
    }

    #[test]
    fn completes_mentions_from_the_listed_paths() {
        let files = ["src/", "src/main.rs", "src/mod.rs"];
        let list = |typed: &str| -> Result<Vec<String>, String> {
            if typed.contains("..") {
                return Err("outside the working directory".into());
            }
            Ok(files
                .iter()
                .filter(|f| {
                    f.starts_with(typed)
                        && f[typed.len()..].trim_end_matches('/').find('/').is_none()
                })
                .map(|f| (*f).to_owned())
                .collect())
        };
        let c = commands();
        let controls = Controls::default();
        assert_eq!(
            complete("see @s", &c, &controls, &list).line.as_deref(),
            Some("see @src/")
        );
        assert_eq!(
            complete("see @src/ma", &c, &controls, &list)
                .line
                .as_deref(),
            Some("see @src/main.rs ")
        );
        let two = complete("@src/m", &c, &controls, &list);
        assert_eq!(two.shown, ["  @src/main.rs", "  @src/mod.rs"]);
        assert_eq!(
            complete("@../", &c, &controls, &list).shown,
            ["outside the working directory"]
        );
        assert_eq!(
            complete("@zz", &c, &controls, &list).shown,
            ["no file matches @zz"]
        );
    }
}
