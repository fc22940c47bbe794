"""How each production agent is started and pointed at the emulator, offline.

The agents are installed by `spindle agents install` (registry_install.py, run by install.sh) into
Spindle's data directory under `agents-data/`; each command is the install record's `program` and
`args` (`agents-data/spindle/agents/<id>/install.json`), with what a run adds after them.

Each `AgentSpec` says: the command line, the environment (base URL of the scripted model API, a
dummy key, telemetry and update checks off), the config files written into the run's temporary
HOME, which API the agent speaks, and which scripts it cannot express (with the reason). Nothing
here is read from the developer's own HOME: every run gets a fresh one.
"""

import json
import os
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
# XDG_DATA_HOME of the installs (registry_install.py --data-home): Spindle's data directory is
# DATA_HOME/spindle, an agent's install record DATA_HOME/spindle/agents/<id>/install.json.
DATA_HOME = os.environ.get("REAL_AGENTS_DATA_HOME") or os.path.join(HERE, "agents-data")
DUMMY_KEY = "sk-emulated-dummy-key"

QUIET_ENV = {
    "NO_COLOR": "1",
    "CI": "1",
    "DO_NOT_TRACK": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "NO_UPDATE_NOTIFIER": "1",
    "npm_config_update_notifier": "false",
}


def install_record(install_id):
    """The install record `spindle agents install` wrote for `install_id`, or None."""
    try:
        with open(os.path.join(DATA_HOME, "spindle", "agents", install_id, "install.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


@dataclass
class AgentSpec:
    name: str
    package: str  # the pinned package (npm, or `pypi:` + the PyPI distribution), for the reports
    api: str  # which model API the agent calls (anthropic, openai, responses, gemini, none)
    unsupported: dict = field(default_factory=dict)  # script -> why the agent cannot express it (chat and serve)
    # What modes-history asks for (from the agent's own session/new answer, see probe.py):
    # mode (a modeId, or with mode_via "config" a value of the `mode` config option), model (a
    # value of the `model` config option), model_api (what the model API request then names).
    controls: dict = field(default_factory=dict)
    history: str = "list"  # "list": session/list + resume; "load": session/load only (no list)
    # The auth probe: drop_env / drop_settings (credentials left out), methods (ids the report
    # must name), sign_in (a method id for --auth), sign_in_env (restored for the sign-in).
    auth: dict = field(default_factory=dict)
    # What the adapter routes through the client's fs when offered (probe.py): client-edit checks
    # the read only where the agent reads through the client.
    client_fs: tuple = ("read", "write")
    install_id: str = ""  # the registry id it is installed under (default: the name)

    def record(self):
        return install_record(self.install_id or self.name)

    def version(self):
        record = self.record()
        return record["version"] if record else "not installed"

    def installed(self):
        record = self.record()
        return bool(record) and os.access(record.get("program") or "", os.X_OK)

    def installed_command(self):
        """The install record's program and arguments (what `spindle --agent ID` would run)."""
        record = self.record()
        if not record:
            raise RuntimeError(f"{self.name}: not installed (tests/real-agents/install.sh: spindle agents install {self.install_id or self.name})")
        return [record["program"], *record.get("args", [])]

    def setup(self, home, work, base_url, script=None):
        """Write config files; return (command, env)."""
        raise NotImplementedError


def write_json(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(value, f, indent=2)


# Claude Code and Codex start a session in a mode where a reviewer decides instead of the user
# (Claude's "auto": a classifier the model API runs, see emulator.tool_use_verdicts; Codex's "agent":
# a guardian sub-agent, emulator.is_codex_guardian): a harmless write asks no permission. The
# reject scripts are about the user's "no", so they run in the mode that asks, set as a user would.
MANUAL_SCRIPTS = ("reject",)


class Claude(AgentSpec):
    def setup(self, home, work, base_url, script=None):
        if script in MANUAL_SCRIPTS:
            # Manual (`default`): ~/.claude/settings.json permissions.defaultMode, which the
            # adapter reads for a new session (resolveInitialPermissionMode, session-mode.js).
            write_json(os.path.join(home, ".claude", "settings.json"), {"permissions": {"defaultMode": "default"}})
        env = {
            "ANTHROPIC_BASE_URL": base_url,
            "ANTHROPIC_API_KEY": DUMMY_KEY,
            # Claude Code refuses --dangerously-skip-permissions as root, and the adapter's
            # session/new fails as root, unless it is told it runs in a sandbox.
            "IS_SANDBOX": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "CLAUDE_CODE_MAX_RETRIES": "2",
        }
        return self.installed_command(), env


class Qwen(AgentSpec):
    def setup(self, home, work, base_url, script=None):
        write_json(
            os.path.join(home, ".qwen", "settings.json"),
            {
                "security": {"auth": {"selectedType": "openai"}},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "model": {"name": "qwen3-coder-plus"},
            },
        )
        env = {
            "OPENAI_BASE_URL": base_url + "/v1",
            "OPENAI_API_KEY": DUMMY_KEY,
            "OPENAI_MODEL": "qwen3-coder-plus",
        }
        return self.installed_command(), env  # args: --acp --approval-mode default (registry entry)


class Gemini(AgentSpec):
    def setup(self, home, work, base_url, script=None):
        write_json(
            os.path.join(home, ".gemini", "settings.json"),
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "privacy": {"usageStatisticsEnabled": False},
                "telemetry": {"enabled": False},
                "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
                "model": {"name": "gemini-2.5-pro"},
            },
        )
        # An untrusted folder refuses "allow always" approvals: trust the run's work directory.
        write_json(os.path.join(home, ".gemini", "trustedFolders.json"), {work: "TRUST_FOLDER"})
        env = {
            "GEMINI_API_KEY": DUMMY_KEY,
            "GOOGLE_GEMINI_BASE_URL": base_url,
            "GEMINI_CLI_NO_RELAUNCH": "true",
        }
        return self.installed_command(), env


class OpenCode(AgentSpec):
    def setup(self, home, work, base_url, script=None):
        config = {
            "$schema": "https://opencode.ai/config.json",
            "autoupdate": False,
            "share": "disabled",
            "model": "emulator/emulated-model",
            "small_model": "emulator/emulated-model",
            "provider": {
                "emulator": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Scripted model emulator",
                    "options": {"baseURL": base_url + "/v1", "apiKey": DUMMY_KEY},
                    "models": {
                        # Images accepted (prompt-content), else opencode replaces an image by an error text.
                        "emulated-model": {"name": "emulated-model", "tool_call": True, "reasoning": True, "attachment": True, "modalities": {"input": ["text", "image"], "output": ["text"]}},
                        # A second model on the same emulator, for /model.
                        "emulated-model-2": {"name": "emulated-model-2", "tool_call": True, "reasoning": True},
                    },
                }
            },
            "permission": {"edit": "ask", "bash": "ask"},
        }
        write_json(os.path.join(home, ".config", "opencode", "opencode.json"), config)
        env = {
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_SHARE": "1",
        }
        return self.installed_command(), env


class Codex(AgentSpec):
    def setup(self, home, work, base_url, script=None):
        codex_home = os.path.join(home, ".codex")
        os.makedirs(codex_home, exist_ok=True)
        with open(os.path.join(codex_home, "config.toml"), "w") as f:
            f.write(
                'model = "gpt-5.5"\n'
                'model_provider = "emulator"\n'
                'approval_policy = "on-request"\n'
                'sandbox_mode = "read-only"\n'
                "check_for_update_on_startup = false\n"
                "[model_providers.emulator]\n"
                'name = "Scripted model emulator"\n'
                f'base_url = "{base_url}/v1"\n'
                'env_key = "EMULATOR_API_KEY"\n'
                'wire_api = "responses"\n'
                "request_max_retries = 2\n"
                "stream_max_retries = 2\n"
                f'[projects."{work}"]\n'
                'trust_level = "trusted"\n'
            )
        env = {"CODEX_HOME": codex_home, "EMULATOR_API_KEY": DUMMY_KEY, "OPENAI_API_KEY": DUMMY_KEY}
        if script in MANUAL_SCRIPTS:
            # codex-acp 2.x starts in "agent" (Auto review: its guardian sub-agent approves, see
            # emulator.is_codex_guardian) and reads its first mode from INITIAL_AGENT_MODE only
            # (AgentMode.getInitialAgentMode in its dist/index.js), not from config.toml.
            env["INITIAL_AGENT_MODE"] = "read-only"
        # codex-acp 2.x is a Node adapter over `codex app-server` (the @openai/codex package it
        # depends on); 0.x was a native binary of its own.
        return self.installed_command(), env


class FastAgent(AgentSpec):
    """fast-agent with its built-in passthrough model: no model API at all (echoes the prompt)."""

    def setup(self, home, work, base_url, script=None):
        return self.installed_command() + ["--model", "passthrough"], {}


class FastAgentAnthropic(AgentSpec):
    """fast-agent driving the emulator through its Anthropic provider, with its shell runtime on."""

    def setup(self, home, work, base_url, script=None):
        config = os.path.join(home, "fastagent.config.yaml")
        with open(config, "w") as f:
            f.write(
                "default_model: anthropic.claude-sonnet-4-5\n"
                "logger:\n  level: error\n  progress_display: false\n  show_chat: false\n  show_tools: false\n"
                f"anthropic:\n  api_key: {DUMMY_KEY}\n  base_url: {base_url}\n"
            )
        command = self.installed_command() + ["--config-path", config, "--model", "anthropic.claude-sonnet-4-5", "--shell"]
        return command, {"ANTHROPIC_API_KEY": DUMMY_KEY}


PASSTHROUGH = "not offered: fast-agent's passthrough model echoes the prompt; it calls no model API and no tools"

# Why the elicit script (an MCP server's elicitation/create, forwarded to the client as ACP
# elicitation/create) does not run for an agent: what its source says (paths under
# agents-data/spindle/agents/<id>/<version>/) and what the mcp runs' server logs show.
# Why the ask script (the agent's own question tool as a form elicitation) does not run.
NO_QUESTION_ELICITATION = "not offered: its ACP agent sends no elicitation/create (its own question tool, where it has one, does not go through the client as an elicitation)"
NO_ELICITATION = {
    "qwen": "not offered: its MCP client declares no elicitation capability (registerCapabilities({roots: {}}), "
    "node_modules/@qwen-code/qwen-code/chunks/chunk-DPEB6S2R.js line 116859; the mcp runs' server log shows "
    "capabilities {extensions, roots}) and its ACP agent (chunks/acpAgent-GQCJ4KZY.js) never mentions elicitation",
    "gemini": "not offered: its MCP client declares only roots (connectToMcpServer, node_modules/@google/gemini-cli/"
    "bundle/chunk-JDPZ4CE3.js line 370033) and its ACP agent (bundle/gemini-3HFX2LNT.js) sends no elicitation/create",
    "opencode": "not offered: its MCP client is created with {capabilities: {roots: {}}} (the bundled JS in "
    "node_modules/opencode-linux-x64/bin/opencode: `M5={capabilities:{roots:{}}}`); the ACP SDK's "
    "unstable_createElicitation is bundled but never called",
    "fast-agent": "fails (agent), not run: its MCP client declares elicitation but answers it with its own terminal "
    "form (fast_agent/mcp/elicitation_factory.py line 89, mode \"forms\"), drawn on its ACP stdout (seen: "
    "\"| Elicitation Request |\" box lines in the wire log, each a -32700 for the client) while it waits on stdin "
    "for keys: the turn never ends (120 s timeout); nothing in fast_agent/acp/ sends elicitation/create",
}

# Why a client-services script does not run for an agent (facts from probe.py, which advertises
# fs and terminals and serves them itself).
OWN_TOOLS = "not used: the adapter sends no fs/* nor terminal/* request with both advertised (probe.py read, write, edit, shell: its own tools)"
NO_TERMINAL = "not used: the adapter runs commands itself, no terminal/create with terminals advertised (probe.py shell)"
READ_IN_EDIT = "covered by client-edit, which reads the file through the client first"
NO_CLIENT = {s: OWN_TOOLS for s in ["client-read", "client-write", "client-edit", "client-shell", "client-outside"]}

AGENTS = [
    Claude(
        "claude", "@agentclientprotocol/claude-agent-acp", "anthropic",
        unsupported={
            **NO_CLIENT,
            "serve-auth": "not probed: its auth_required comes from session/prompt, with no method to sign in with (see claude/auth)",
        },
        controls={"mode": "acceptEdits", "model": "haiku", "model_api": "haiku"},
        auth={"drop_env": ["ANTHROPIC_API_KEY"], "methods": []},
    ),
    Qwen(
        "qwen", "@qwen-code/qwen-code", "openai",
        unsupported={"client-read": READ_IN_EDIT, "client-shell": NO_TERMINAL, "elicit": NO_ELICITATION["qwen"], "ask": NO_QUESTION_ELICITATION},
        # One model only (the configured one): nothing to switch to.
        controls={"mode": "auto-edit"},
        auth={
            "drop_env": ["OPENAI_API_KEY"], "drop_settings": [".qwen/settings.json"], "methods": ["openai"],
            "sign_in": "openai", "sign_in_env": {"OPENAI_API_KEY": DUMMY_KEY},
        },
    ),
    Gemini(
        "gemini", "@google/gemini-cli", "gemini",
        unsupported={
            "client-read": "not used: its read_file tool reads the file itself (probe.py read); its edit reads through the client (client-edit)",
            "client-shell": NO_TERMINAL,
            "client-outside": "not used: Gemini CLI refuses a path outside its workspace itself, no request reaches the client (probe.py write-outside)",
            "auth": "not probed: with GOOGLE_GEMINI_BASE_URL and no key it still calls that endpoint, no auth_required (probe.py --no-creds)",
            "elicit": NO_ELICITATION["gemini"],
            "ask": NO_QUESTION_ELICITATION,
        },
        # Its models are the unstable `models` field (session/set_model), no `model` config option.
        controls={"mode": "autoEdit"},
        history="load",
    ),
    OpenCode(
        "opencode", "opencode-ai", "openai",
        unsupported={
            "client-read": "not used: opencode reads files itself; only writes go through the client (probe.py read, edit)",
            "client-shell": NO_TERMINAL,
            "auth": "not probed: a custom provider needs no sign-in (its one method runs `opencode auth login` in a terminal)",
            "elicit": NO_ELICITATION["opencode"],
            "ask": NO_QUESTION_ELICITATION,
        },
        client_fs=("write",),
        controls={"mode": "plan", "mode_via": "config", "model": "emulator/emulated-model-2", "model_api": "emulated-model-2"},
    ),
    Codex(
        "codex", "@agentclientprotocol/codex-acp", "responses",
        unsupported={
            **NO_CLIENT,
            "ask": "offered, not exercised: its request_user_input tool becomes a form elicitation (handleUserInput, "
            "dist/index.js) but only in Plan mode (the collaboration_mode option): in its default mode the tool answers "
            "\"request_user_input is unavailable in Default mode\" (seen with 2.6.0)",
            "auth": "not probed: without its key (2.6.0) session/new succeeds and the prompt ends end_turn with the agent message \"Missing environment variable: `EMULATOR_API_KEY`.\", no auth_required (methods api-key, chat-gpt)",
        },
        controls={"mode": "workspace-write", "model": "gpt-5.6-sol", "model_api": "gpt-5.6-sol"},
    ),
    FastAgent(
        "fast-agent",
        "pypi:fast-agent-acp",
        "none",
        unsupported={
            **{
                s: PASSTHROUGH
                for s in ["usage-partial", "thinking", "read", "write", "edit", "shell", "reject", "cancel", "long", "api-429", "api-500-mid", "mcp", "elicit", "ask", "undo"]
            },
            **{s: PASSTHROUGH for s in NO_CLIENT},
            "modes-history": "checked with fast-agent-anthropic (the same adapter)",
            "prompt-content": "checked with fast-agent-anthropic (the passthrough model calls no model API)",
            "auth": "not probed: its one method (fast-agent-ai-secrets) only points at the config file",
        },
    ),
    FastAgentAnthropic(
        "fast-agent-anthropic",
        "pypi:fast-agent-acp",
        "anthropic",
        install_id="fast-agent",
        unsupported={
            "reject": "not offered: fast-agent runs its tools without session/request_permission",
            "client-read": READ_IN_EDIT,
            "auth": "not probed: the key is read from its config file; its one method (fast-agent-ai-secrets) only points there",
            "elicit": NO_ELICITATION["fast-agent"],
            "ask": "not offered: nothing in fast_agent/acp/ sends elicitation/create; it has no question tool of its own",
        },
        # One mode (agent), no config options: the history part only.
    ),
]
