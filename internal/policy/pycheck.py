"""Static safety check of Python sources; it parses and never imports them.

Usage: python3 -I -B pycheck.py [--config JSON | --config-file PATH] [--root DIR] [--then CMD...]

The config is {"deny": ["process", "network", ...], "judge": {"a.py": null,
"b.py": [[3, 5]]}, "tests": ["test_a.py"], "warn": false}; without one every
category is denied. Every .py file under the root (default: the current
directory) that "judge" names is parsed with ast (every one without
"judge"): null judges the whole file, a list of [from, to] line spans only
those lines (the lines a task added or changed; the rest is the user's own
code). Network findings in the files "tests" names are not findings: a test
that serves and calls this machine is what a test of a server does. Each
syntax error of a judged file and each use of a denied category on a judged
line is printed as one JSON object per line:

    {"file": "pkg/a.py", "line": 3, "rule": "process", "message": "..."}

followed by one final line {"done": true, "files": N, "findings": M,
"dropped": K}, so that a reader can tell complete output from a run that was
killed or truncated.

With --then, a check without findings (with "warn", without syntax errors)
removes this script and its config file and replaces itself with CMD once
the summary is written, so the command's output follows the report and no
checked code runs before the report is complete.
"""

import ast
import json
import os
import sys

MAX_FINDINGS = 500  # more would only flood the prompt the findings feed

# Qualified names denied per category. "a.b" matches "a.b" and "a.b.c";
# a trailing "*" matches any last component with that prefix (os.exec*).
# Builtins are spelled "builtins.<name>".
NAMES = {
    "process": [
        "subprocess", "pty", "multiprocessing", "_posixsubprocess", "pexpect",
        "sh", "webbrowser", "asyncio.subprocess", "concurrent.futures.process",
        "concurrent.futures.ProcessPoolExecutor",
        "os.system", "os.popen", "os.exec*", "os.spawn*", "os.fork",
        "os.forkpty", "os.posix_spawn", "os.posix_spawnp", "os.startfile",
        "asyncio.create_subprocess_exec", "asyncio.create_subprocess_shell",
        "platform.popen",
    ],
    "network": [
        "socket", "_socket", "ssl", "urllib.request", "urllib.robotparser",
        "urllib2", "http.client", "http.server", "httplib", "requests",
        "httpx", "aiohttp", "urllib3", "ftplib", "smtplib", "poplib",
        "imaplib", "nntplib", "telnetlib", "xmlrpc", "socketserver",
        "websocket", "websockets", "paramiko",
        "asyncio.open_connection", "asyncio.start_server",
        "asyncio.open_unix_connection", "asyncio.start_unix_server",
        "asyncio.streams.open_connection", "asyncio.streams.start_server",
        "asyncio.streams.open_unix_connection", "asyncio.streams.start_unix_server",
        "logging.handlers.SocketHandler", "logging.handlers.DatagramHandler",
        "logging.handlers.SysLogHandler", "logging.handlers.HTTPHandler",
        "logging.handlers.SMTPHandler", "logging.config.listen",
    ],
    "dynamic": [
        "builtins.eval", "builtins.exec", "builtins.compile",
        "builtins.__import__", "importlib", "runpy", "sys.modules",
    ],
    "native": ["ctypes", "_ctypes", "cffi", "_cffi_backend"],
}

# credentials are matched on the host, by line rules shared by every language.
CATEGORIES = list(NAMES) + ["abs-write", "credentials"]

# asyncio event loop methods, reached through a loop object no import names
# (asyncio.get_running_loop().create_connection), so they are matched by
# method name: method -> (category, what it does).
LOOP_METHODS = {
    "create_connection": ("network", "opens a network connection"),
    "create_datagram_endpoint": ("network", "opens a network socket"),
    "create_server": ("network", "starts a network server"),
    "create_unix_connection": ("network", "opens a socket connection"),
    "create_unix_server": ("network", "starts a socket server"),
    "sock_connect": ("network", "opens a network connection"),
    "subprocess_exec": ("process", "starts a process"),
    "subprocess_shell": ("process", "starts a shell command"),
}

# Attributes that reach interpreter internals, a common way around name rules.
INTROSPECTION = {
    "__subclasses__", "__globals__", "__builtins__", "__code__",
    "f_globals", "f_builtins",
}

DYNAMIC_IMPORTS = {"builtins.__import__", "importlib.import_module", "importlib.__import__"}

# Calls that write at a path: qualified name -> (path args, mode arg, kind).
# A path arg is (position, keyword). kind "open" writes when the mode has
# w/a/x/+; kind "osopen" writes unless the flags are os.O_RDONLY.
WRITES = {
    "builtins.open": ([(0, "file")], (1, "mode"), "open"),
    "io.open": ([(0, "file")], (1, "mode"), "open"),
    "codecs.open": ([(0, "filename")], (1, "mode"), "open"),
    "os.open": ([(0, "path")], (1, "flags"), "osopen"),
    "os.makedirs": ([(0, "name")], None, ""),
    "os.mkdir": ([(0, "path")], None, ""),
    "os.remove": ([(0, "path")], None, ""),
    "os.unlink": ([(0, "path")], None, ""),
    "os.rmdir": ([(0, "path")], None, ""),
    "os.removedirs": ([(0, "name")], None, ""),
    "os.rename": ([(0, "src"), (1, "dst")], None, ""),
    "os.renames": ([(0, "old"), (1, "new")], None, ""),
    "os.replace": ([(0, "src"), (1, "dst")], None, ""),
    "os.symlink": ([(1, "dst")], None, ""),
    "os.link": ([(1, "dst")], None, ""),
    "os.chmod": ([(0, "path")], None, ""),
    "os.chown": ([(0, "path")], None, ""),
    "os.lchown": ([(0, "path")], None, ""),
    "os.truncate": ([(0, "path")], None, ""),
    "os.mkfifo": ([(0, "path")], None, ""),
    "os.mknod": ([(0, "path")], None, ""),
    "shutil.rmtree": ([(0, "path")], None, ""),
    "shutil.copy": ([(1, "dst")], None, ""),
    "shutil.copy2": ([(1, "dst")], None, ""),
    "shutil.copyfile": ([(1, "dst")], None, ""),
    "shutil.copytree": ([(1, "dst")], None, ""),
    "shutil.move": ([(0, "src"), (1, "dst")], None, ""),
    "shutil.chown": ([(0, "path")], None, ""),
    "tempfile.mkstemp": ([(2, "dir")], None, ""),
    "tempfile.mkdtemp": ([(2, "dir")], None, ""),
}

# pathlib methods that write at the receiver: name -> (path args, mode arg).
PATH_WRITES = {
    "write_text": ([], None),
    "write_bytes": ([], None),
    "mkdir": ([], None),
    "touch": ([], None),
    "unlink": ([], None),
    "rmdir": ([], None),
    "chmod": ([], None),
    "lchmod": ([], None),
    "symlink_to": ([], None),
    "hardlink_to": ([], None),
    "rename": ([(0, "target")], None),
    "replace": ([(0, "target")], None),
    "open": ([], (0, "mode")),
}

# Calls whose result is a path built from their arguments.
PATH_BUILDERS = {
    "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath",
    "pathlib.PurePosixPath", "os.path.join", "posixpath.join",
    "os.path.abspath", "os.path.normpath", "os.path.realpath", "os.fspath",
    "builtins.str",
}

MAX_CANDIDATES = 16  # bounds the alias sets of pathological sources


def matches(pattern, name):
    if pattern.endswith("*"):
        head, _, last = name.rpartition(".")
        phead, _, plast = pattern[:-1].rpartition(".")
        return head == phead and last.startswith(plast)
    return name == pattern or name.startswith(pattern + ".")


def display(name):
    return name[len("builtins."):] if name.startswith("builtins.") else name


def str_const(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def strip_dict(name):
    return name[: -len(".__dict__")] if name.endswith(".__dict__") else name


def get_arg(call, spec):
    pos, kw = spec
    if pos < len(call.args) and not any(isinstance(a, ast.Starred) for a in call.args[: pos + 1]):
        return call.args[pos]
    for k in call.keywords:
        if k.arg == kw:
            return k.value
    return None


def is_abs(path):
    return path.startswith("/") or path.startswith("~")


def module_level(body):
    """Yields the statements that bind names in the module scope."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            yield from module_level(getattr(stmt, field, []))
        for handler in getattr(stmt, "handlers", []):
            yield from module_level(handler.body)
        for case in getattr(stmt, "cases", []):
            yield from module_level(case.body)


class FileChecker:
    def __init__(self, rel, tree, deny):
        self.rel = rel
        self.tree = tree
        self.deny = deny
        self.aliases = {}  # name -> set of qualified names it may hold
        self.paths = {}  # name -> literal paths it may hold
        self.stars = []  # modules imported with *
        self.local = set()  # names bound in the module scope
        self.deleted = set()
        self.findings = {}  # (line, rule) -> message

    # --- bindings -------------------------------------------------------

    def bind(self, name, qualified):
        cands = self.aliases.setdefault(name, set())
        if len(cands) < MAX_CANDIDATES:
            cands.update(qualified)

    def collect(self):
        for stmt in module_level(self.tree.body):
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.local.add(stmt.name)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                for a in stmt.names:
                    self.local.add(a.asname or a.name.split(".")[0])
            elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.AsyncFor)):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            self.local.add(n.id)
        # Aliases are collected from every scope and twice, so that an alias
        # of an alias resolves whatever the order of the assignments.
        for _ in range(2):
            for node in ast.walk(self.tree):
                self.collect_node(node)

    def collect_node(self, node):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    self.bind(a.asname, {a.name})
                else:
                    top = a.name.split(".")[0]
                    self.bind(top, {top})
        elif isinstance(node, ast.ImportFrom):
            if node.level or not node.module:
                return  # relative imports name workspace modules, checked as files
            for a in node.names:
                if a.name == "*":
                    if node.module not in self.stars:
                        self.stars.append(node.module)
                else:
                    self.bind(a.asname or a.name, {node.module + "." + a.name})
        elif isinstance(node, (ast.Assign, ast.NamedExpr, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None:
                return
            qualified = self.resolve(node.value)
            path = self.literal_path(node.value)
            for t in targets:
                if isinstance(t, ast.Name):
                    if qualified:
                        self.bind(t.id, qualified)
                    if path is not None:
                        self.paths.setdefault(t.id, set()).add(path)
        elif isinstance(node, ast.Delete):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    self.deleted.add(t.id)

    # --- resolution -----------------------------------------------------

    def resolve_name(self, name):
        out = set(self.aliases.get(name, ()))
        for mod in self.stars:
            cand = mod + "." + name
            if self.denied(cand):
                out.add(cand)
        if name == "__builtins__":
            out.add("builtins")
        elif name not in self.local or name in self.deleted:
            # Unbound in the module scope: the name may be the builtin.
            out.add("builtins." + name)
        return out

    def resolve(self, node):
        """Returns the qualified names an expression may evaluate to."""
        if isinstance(node, ast.Name):
            return self.resolve_name(node.id)
        if isinstance(node, ast.Attribute):
            return {b + "." + node.attr for b in self.resolve(node.value)}
        if isinstance(node, ast.NamedExpr):
            return self.resolve(node.value)
        if isinstance(node, ast.Subscript):
            key = str_const(node.slice)
            if key is None:
                return set()
            # mod.__dict__["x"], vars(mod)["x"] and __builtins__["x"] name mod.x.
            return {strip_dict(b) + "." + key for b in self.resolve(node.value)}
        if isinstance(node, ast.Call) and node.args:
            funcs = self.resolve(node.func)
            first = str_const(node.args[0])
            out = set()
            if first and funcs & DYNAMIC_IMPORTS:
                # __import__("a.b") returns a, import_module("a.b") returns a.b.
                if "builtins.__import__" in funcs:
                    out.add(first.split(".")[0])
                if funcs & {"importlib.import_module", "importlib.__import__"}:
                    out.add(first)
            if "builtins.getattr" in funcs and len(node.args) >= 2:
                name = str_const(node.args[1])
                if name:
                    out.update(b + "." + name for b in self.resolve(node.args[0]))
            if "builtins.vars" in funcs:
                out.update(b + ".__dict__" for b in self.resolve(node.args[0]))
            return out
        return set()

    def literal_path(self, node, depth=0):
        """Returns the literal prefix of a path expression, or None."""
        if depth > 20:
            return None
        if isinstance(node, ast.Constant):
            if isinstance(node.value, str):
                return node.value
            if isinstance(node.value, bytes):
                return node.value.decode("latin-1")
            return None
        if isinstance(node, ast.JoinedStr):
            return str_const(node.values[0]) if node.values else None
        if isinstance(node, ast.BinOp):
            if isinstance(node.op, ast.Div):
                right = self.literal_path(node.right, depth + 1)
                if right is not None and is_abs(right):
                    return right  # Path("a") / "/etc" is "/etc"
            if isinstance(node.op, (ast.Div, ast.Add, ast.Mod)):
                return self.literal_path(node.left, depth + 1)
            return None
        if isinstance(node, ast.Name):
            paths = self.paths.get(node.id, ())
            return next((p for p in sorted(paths) if is_abs(p)), next(iter(sorted(paths)), None))
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            return self.literal_path(node.value, depth + 1)
        if isinstance(node, ast.Call):
            funcs = self.resolve(node.func)
            if funcs & {"pathlib.Path.home", "os.path.expanduser"}:
                if "pathlib.Path.home" in funcs:
                    return "~"
                return self.literal_path(node.args[0], depth + 1) if node.args else None
            if funcs & PATH_BUILDERS:
                parts = [self.literal_path(a, depth + 1) for a in node.args]
                # Joining with an absolute part discards what came before it.
                absolute = [p for p in parts if p is not None and is_abs(p)]
                if absolute:
                    return absolute[-1]
                return parts[0] if parts else None
            if isinstance(node.func, ast.Attribute) and node.func.attr == "format":
                return self.literal_path(node.func.value, depth + 1)
        return None

    # --- reporting ------------------------------------------------------

    def denied(self, name):
        for cat, patterns in NAMES.items():
            if cat in self.deny and any(matches(p, name) for p in patterns):
                return cat
        return None

    @staticmethod
    def sensitive(module):
        """Reports whether a module holds a name some rule matches."""
        prefix = module + "."
        return any(p.startswith(prefix) or matches(p, module) for patterns in NAMES.values() for p in patterns)

    def report(self, node, rule, message):
        key = (getattr(node, "lineno", 0), rule)
        self.findings.setdefault(key, message)

    def report_names(self, node, names, verb):
        for name in sorted(names):
            cat = self.denied(name)
            if cat:
                self.report(node, cat, "%s %s" % (verb, display(name)))

    def check(self):
        self.collect()
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Import):
                self.report_names(node, {a.name for a in node.names}, "imports")
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                self.report_names(node, {node.module}, "imports")
                self.report_names(node, {node.module + "." + a.name for a in node.names if a.name != "*"}, "imports")
            elif isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load):
                self.report_names(node, self.resolve(node), "uses")
                if isinstance(node, ast.Attribute) and node.attr in INTROSPECTION and "dynamic" in self.deny:
                    self.report(node, "dynamic", "reads interpreter internals through ." + node.attr)
                if isinstance(node, ast.Attribute):
                    self.check_loop_method(node)
            elif isinstance(node, ast.Call):
                self.report_names(node, self.resolve(node), "uses")
                self.check_call(node)
            elif isinstance(node, ast.Subscript):
                self.report_names(node, self.resolve(node), "uses")
                self.check_computed(node, node.value, node.slice, "indexes")
        return [
            {"file": self.rel, "line": line, "rule": rule, "message": msg}
            for (line, rule), msg in sorted(self.findings.items())
        ]

    def check_loop_method(self, node):
        """Flags an event loop method used on an object, not on a module."""
        spec = LOOP_METHODS.get(node.attr)
        if not spec or spec[0] not in self.deny:
            return
        receivers = self.resolve(node.value)
        if receivers and not any(r.startswith("builtins.") for r in receivers):
            return  # an imported module's function: the name rules decide
        self.report(node, spec[0], "uses .%s, the asyncio event loop method that %s (rename it if it is your own)"
                    % (node.attr, spec[1]))

    def check_computed(self, node, target, key, verb):
        """Flags a computed name looked up on a module that has denied names."""
        if "dynamic" not in self.deny:
            return
        if str_const(key) == "__builtins__":
            self.report(node, "dynamic", "%s __builtins__" % verb)
            return
        if str_const(key) is not None:
            return  # a literal name is resolved and checked as a use
        for base in sorted(strip_dict(b) for b in self.resolve(target)):
            if self.sensitive(base):
                self.report(node, "dynamic", "%s %s with a computed name" % (verb, display(base) or base))
                return

    def check_call(self, node):
        funcs = self.resolve(node.func)
        if node.args and funcs & DYNAMIC_IMPORTS:
            mod = str_const(node.args[0])
            if mod is None:
                if "dynamic" in self.deny:
                    self.report(node, "dynamic", "imports a computed module name")
            else:
                self.report_names(node, {mod}, "imports")
        if "builtins.getattr" in funcs and len(node.args) >= 2:
            self.check_computed(node, node.args[0], node.args[1], "reads from")
        if "abs-write" not in self.deny:
            return
        for name in sorted(funcs):
            spec = WRITES.get(name)
            if spec and self.writes(node, spec[1], spec[2]):
                self.check_paths(node, display(name), [get_arg(node, a) for a in spec[0]])
        if isinstance(node.func, ast.Attribute) and node.func.attr in PATH_WRITES:
            args, mode = PATH_WRITES[node.func.attr]
            if self.writes(node, mode, "open"):
                targets = [node.func.value] + [get_arg(node, a) for a in args]
                self.check_paths(node, "." + node.func.attr, targets)

    def writes(self, node, mode_spec, kind):
        if mode_spec is None:
            return True
        mode = get_arg(node, mode_spec)
        if kind == "osopen":
            read_only = self.resolve(mode) == {"os.O_RDONLY"} or (
                isinstance(mode, ast.Constant) and mode.value == 0
            )
            return not read_only
        if mode is None:
            return False  # open() reads by default
        text = str_const(mode)
        return text is None or any(c in text for c in "wax+")

    def check_paths(self, node, what, exprs):
        for expr in exprs:
            if expr is None:
                continue
            path = self.literal_path(expr)
            if path is not None and is_abs(path):
                self.report(node, "abs-write", "%s writes to absolute path %r; write inside the working directory" % (what, path))
                return


class Config:
    def __init__(self):
        self.deny = set(CATEGORIES)
        self.root = "."
        self.judge = None  # rel -> None (whole file) or [[from, to], ...]
        self.tests = set()
        self.warn = False
        self.path = None  # the config file, removed with this script

    def judged(self, rel):
        return self.judge is None or rel in self.judge

    def keep(self, rel, finding):
        """Reports whether a finding of a judged file is the task's."""
        if finding["rule"] == "syntax":
            return True
        if finding["rule"] == "network" and rel in self.tests:
            return False
        spans = None if self.judge is None else self.judge.get(rel)
        line = finding["line"]
        return spans is None or line == 0 or any(a <= line <= b for a, b in spans)


def load_config(argv):
    cfg = Config()
    i = 0
    while i < len(argv):
        flag = argv[i]
        if flag not in ("--config", "--config-file", "--root") or i + 1 >= len(argv):
            raise SystemExit("pycheck: usage: [--config JSON | --config-file PATH] [--root DIR]")
        value = argv[i + 1]
        i += 2
        if flag == "--root":
            cfg.root = value
            continue
        if flag == "--config-file":
            cfg.path = value
            with open(value, encoding="utf-8") as f:
                value = f.read()
        config = json.loads(value)
        deny = config.get("deny", sorted(cfg.deny))
        unknown = [c for c in deny if c not in CATEGORIES]
        if unknown:
            raise SystemExit("pycheck: unknown categories %s (known: %s)" % (unknown, ", ".join(CATEGORIES)))
        cfg.deny = set(deny)
        cfg.judge = config.get("judge", cfg.judge)
        cfg.tests = set(config.get("tests", ()))
        cfg.warn = bool(config.get("warn", False))
    return cfg


def sources(root):
    own = os.path.realpath(__file__)
    for top, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            full = os.path.join(top, name)
            if name.endswith(".py") and os.path.realpath(full) != own:
                yield full, os.path.relpath(full, root).replace(os.sep, "/")


def check_file(full, rel, deny):
    with open(full, "rb") as f:
        data = f.read()
    try:
        tree = ast.parse(data, filename=rel)
    except SyntaxError as e:
        return [{"file": rel, "line": e.lineno or 0, "rule": "syntax", "message": e.msg}]
    except (ValueError, RecursionError, MemoryError) as e:
        return [{"file": rel, "line": 0, "rule": "syntax", "message": str(e) or type(e).__name__}]
    try:
        return FileChecker(rel, tree, deny).check()
    except RecursionError:
        return [{"file": rel, "line": 0, "rule": "syntax", "message": "too deeply nested to check"}]


def main(argv):
    then = []
    if "--then" in argv:
        i = argv.index("--then")
        argv, then = argv[:i], argv[i + 1:]
        if not then:
            raise SystemExit("pycheck: --then needs a command")
    cfg = load_config(argv)
    files = emitted = dropped = 0
    stops = False  # a finding that keeps the command from running
    out = sys.stdout
    for full, rel in sources(cfg.root):
        if not cfg.judged(rel):
            continue
        files += 1
        for finding in check_file(full, rel, cfg.deny):
            if not cfg.keep(rel, finding):
                continue
            stops = stops or not cfg.warn or finding["rule"] == "syntax"
            if emitted < MAX_FINDINGS:
                out.write(json.dumps(finding) + "\n")
                emitted += 1
            else:
                dropped += 1
    out.write(json.dumps({"done": True, "files": files, "findings": emitted, "dropped": dropped}) + "\n")
    out.flush()
    if then and not stops:
        run_next(then, cfg.path)


def run_next(cmd, config_path):
    """Removes this script and its config file, so the command sees only
    the checked files, and becomes cmd."""
    own = os.path.realpath(__file__)
    os.remove(own)
    if config_path and os.path.dirname(os.path.realpath(config_path)) == os.path.dirname(own):
        os.remove(config_path)
    try:
        os.rmdir(os.path.dirname(own))
    except OSError:
        pass
    sys.stderr.flush()
    try:
        os.execvp(cmd[0], cmd)
    except OSError as e:
        sys.stderr.write("cannot run %s: %s\n" % (cmd[0], e.strerror))
        sys.exit(127)


if __name__ == "__main__":
    main(sys.argv[1:])
