#!/usr/bin/env python3
"""Asks a production agent directly (no Spindle) what it does when a client offers everything:
the facts behind COMPATIBILITY.md's rows for client fs, terminals, auth, modes, models and
history, gathered by running the agent, so that a Spindle failure can be told from an agent that
never uses a feature.

One probe: the emulator with a script, the agent set up as by `agents.py` (fresh HOME), then
`initialize` advertising `fs.readTextFile`, `fs.writeTextFile`, `terminal` and
`_meta.terminal_output`; `session/new`; with `--script`, one prompt, serving the agent's
`fs/*` and `terminal/*` requests for real (files under the work directory, real child
processes); then, when offered, `session/set_mode`, `session/set_config_option` (the model),
`session/list`. With `--no-creds` the API keys and auth settings are left out (what does
`session/new` answer?). Every message is written to `--out/probe.jsonl` (the `--record` format)
and a summary is printed as JSON.

Usage: probe.py --agent NAME [--script read|write|shell|...] [--no-creds] [--out DIR]
"""

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

from agents import AGENTS
from runner import agent_env, prompt_for, seed_work, start_emulator

CLIENT_CAPABILITIES = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
    "_meta": {"terminal_output": True},
}
# Environment variables and settings that hold credentials, left out by --no-creds.
SECRET_SUFFIXES = ("_API_KEY", "_AUTH_TOKEN")


class Terminal:
    """A child process for terminal/create; output kept whole (the probe reports sizes only)."""

    def __init__(self, params, cwd):
        env = dict(os.environ)
        for var in params.get("env") or []:
            env[var["name"]] = var["value"]
        self.proc = subprocess.Popen(
            [params["command"], *(params.get("args") or [])],
            cwd=params.get("cwd") or cwd, env=env,
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.output = b""
        self.limit = params.get("outputByteLimit")
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for chunk in iter(lambda: self.proc.stdout.read1(4096), b""):
            self.output += chunk

    def exit_status(self):
        code = self.proc.poll()
        if code is None:
            return None
        self.reader.join(timeout=5)
        return {"exitCode": code, "signal": None} if code >= 0 else {"exitCode": None, "signal": str(-code)}

    def snapshot(self):
        status = self.exit_status()
        text = self.output.decode("utf-8", "replace")
        truncated = bool(self.limit) and len(self.output) > self.limit
        if truncated:
            text = self.output[-self.limit :].decode("utf-8", "ignore")
        out = {"output": text, "truncated": truncated}
        if status:
            out["exitStatus"] = status
        return out


class Probe:
    def __init__(self, command, env, cwd, log_path):
        self.proc = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(log_path + ".stderr", "w"))
        self.cwd = cwd
        self.log = open(log_path, "w")
        self.inbox = queue.Queue()
        self.next_id = 0
        self.terminals = {}
        self.client_requests = []  # (method, params summary, answer summary)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            line = line.decode("utf-8", "replace").strip()
            if not line:
                continue
            self.log.write(line + "\n")
            self.log.flush()
            try:
                self.inbox.put(json.loads(line))
            except ValueError:
                pass
        self.inbox.put(None)

    def send(self, message):
        self.log.write(json.dumps({"sent": message}) + "\n")
        self.log.flush()
        self.proc.stdin.write((json.dumps(message) + "\n").encode())
        self.proc.stdin.flush()

    def request(self, method, params, timeout=120):
        """Sends a request; serves the agent's requests meanwhile; returns ("result"|"error", value)."""
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                msg = self.inbox.get(timeout=0.5)
            except queue.Empty:
                continue
            if msg is None:
                return "error", {"message": "the agent exited", "exit": self.proc.poll()}
            if "method" in msg and "id" in msg:
                self.serve(msg)
            elif msg.get("id") == rid:
                return ("error", msg["error"]) if "error" in msg else ("result", msg.get("result"))
        return "error", {"message": f"no answer in {timeout}s"}

    def serve(self, msg):
        method, params = msg["method"], msg.get("params") or {}
        try:
            result = self.answer(method, params)
            reply = {"jsonrpc": "2.0", "id": msg["id"], "result": result}
        except LookupError:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": f"method not found: {method}"}}
        except (OSError, ValueError, KeyError) as err:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32603, "message": str(err)}}
        brief = {k: v for k, v in params.items() if k not in ("content", "toolCall", "options")}
        self.client_requests.append({"method": method, "params": brief, "ok": "result" in reply})
        self.send(reply)

    def answer(self, method, params):
        if method == "session/request_permission":
            options = params.get("options") or []
            pick = next((o for o in options if o.get("kind") == "allow_once"), None) or next((o for o in options if str(o.get("kind")).startswith("allow")), None)
            return {"outcome": {"outcome": "selected", "optionId": pick["optionId"]}} if pick else {"outcome": {"outcome": "cancelled"}}
        if method == "fs/read_text_file":
            with open(params["path"], encoding="utf-8") as f:
                lines = f.read().splitlines(keepends=True)
            start = max(0, (params.get("line") or 1) - 1)
            end = start + params["limit"] if params.get("limit") else None
            return {"content": "".join(lines[start:end])}
        if method == "fs/write_text_file":
            with open(params["path"], "w", encoding="utf-8") as f:
                f.write(params["content"])
            return None
        if method == "terminal/create":
            terminal_id = f"term-{len(self.terminals) + 1}"
            self.terminals[terminal_id] = Terminal(params, self.cwd)
            return {"terminalId": terminal_id}
        if method.startswith("terminal/"):
            term = self.terminals[params["terminalId"]]
            if method == "terminal/output":
                return term.snapshot()
            if method == "terminal/wait_for_exit":
                term.proc.wait(timeout=60)
                return term.exit_status()
            if method == "terminal/kill":
                term.proc.kill()
                return None
            if method == "terminal/release":
                term.proc.kill()
                del self.terminals[params["terminalId"]]
                return None
        raise LookupError(method)

    def close(self):
        for term in self.terminals.values():
            term.proc.kill()
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def strip_credentials(env, home):
    for key in list(env):
        if key.endswith(SECRET_SUFFIXES):
            del env[key]
    for settings in (os.path.join(home, ".qwen", "settings.json"), os.path.join(home, ".gemini", "settings.json")):
        if os.path.exists(settings):
            with open(settings) as f:
                value = json.load(f)
            value.pop("security", None)
            with open(settings, "w") as f:
                json.dump(value, f)
    opencode = os.path.join(home, ".config", "opencode", "opencode.json")
    if os.path.exists(opencode):
        with open(opencode) as f:
            value = json.load(f)
        value["provider"]["emulator"]["options"].pop("apiKey", None)
        with open(opencode, "w") as f:
            json.dump(value, f)


def other_value(option):
    """A value of a select config option other than the current one."""
    values = [o.get("value") for o in option.get("options") or [] if "value" in o]
    values += [o.get("value") for g in option.get("options") or [] for o in g.get("options") or []]
    return next((v for v in values if v and v != option.get("currentValue")), None)


def probe(agent, script, no_creds, out):
    home, work = os.path.join(out, "home"), os.path.join(out, "work")
    os.makedirs(home, exist_ok=True)
    seed_work(work)
    emulator, port = start_emulator(script or "plain", work, os.path.join(out, "emulator.jsonl"))
    summary = {"agent": agent.name, "version": agent.version(), "script": script, "no_creds": no_creds}
    p = None
    try:
        command, env = agent_env(agent, home, work, out, f"http://127.0.0.1:{port}")
        if no_creds:
            strip_credentials(env, home)
        p = Probe(command, env, work, os.path.join(out, "probe.jsonl"))
        kind, init = p.request("initialize", {"protocolVersion": 1, "clientCapabilities": CLIENT_CAPABILITIES, "clientInfo": {"name": "probe", "version": "0"}})
        summary["initialize"] = kind
        if kind != "result":
            summary["initialize_error"] = init
            return summary
        caps = init.get("agentCapabilities") or {}
        summary["authMethods"] = [m.get("id") for m in init.get("authMethods") or []]
        summary["promptCapabilities"] = caps.get("promptCapabilities")
        summary["loadSession"] = caps.get("loadSession")
        summary["sessionCapabilities"] = sorted((caps.get("sessionCapabilities") or {}).keys())
        kind, new = p.request("session/new", {"cwd": work, "mcpServers": []}, timeout=90)
        summary["session/new"] = kind if kind == "result" else {"error": new}
        if kind != "result":
            return summary
        sid = new["sessionId"]
        modes = new.get("modes") or {}
        summary["modes"] = {"current": modes.get("currentModeId"), "available": [m.get("id") for m in modes.get("availableModes") or []]}
        summary["models"] = {"current": (new.get("models") or {}).get("currentModelId"), "available": [m.get("modelId") for m in (new.get("models") or {}).get("availableModels") or []]}
        summary["configOptions"] = [{"id": o.get("id"), "category": o.get("category"), "current": o.get("currentValue")} for o in new.get("configOptions") or []]
        if script:
            kind, done = p.request("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": prompt_for(script)}]})
            summary["prompt"] = done.get("stopReason") if kind == "result" else {"error": done}
            time.sleep(1)
        summary["client_requests"] = p.client_requests[:]
        if modes.get("availableModes"):
            target = next((m["id"] for m in modes["availableModes"] if m["id"] != modes.get("currentModeId")), None)
            kind, answer = p.request("session/set_mode", {"sessionId": sid, "modeId": target}, timeout=30)
            summary["set_mode"] = {"to": target, "answer": kind if kind == "result" else answer}
        for option in new.get("configOptions") or []:
            if option.get("category") in ("model", "thought_level") or option.get("id") in ("model", "reasoning_effort"):
                value = other_value(option)
                kind, answer = p.request("session/set_config_option", {"sessionId": sid, "configId": option["id"], "value": value}, timeout=30)
                current = None
                if kind == "result":
                    current = next((o.get("currentValue") for o in (answer or {}).get("configOptions") or [] if o.get("id") == option["id"]), None)
                summary["set_config_option:" + option["id"]] = {"to": value, "answer": kind if kind == "result" else answer, "now": current}
        if "list" in summary["sessionCapabilities"]:
            kind, listed = p.request("session/list", {"cwd": work}, timeout=30)
            summary["session/list"] = [s.get("sessionId") == sid for s in listed.get("sessions") or []] if kind == "result" else {"error": listed}
        return summary
    finally:
        if p is not None:
            p.close()
        emulator.terminate()
        emulator.wait(timeout=10)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agent", required=True)
    parser.add_argument("--script")
    parser.add_argument("--no-creds", action="store_true")
    parser.add_argument("--out")
    args = parser.parse_args()
    agent = next(a for a in AGENTS if a.name == args.agent)
    out = args.out or tempfile.mkdtemp(prefix=f"probe-{agent.name}-")
    os.makedirs(out, exist_ok=True)
    summary = probe(agent, args.script, args.no_creds, out)
    summary["dir"] = out
    print(json.dumps(summary))
    if not args.out:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
