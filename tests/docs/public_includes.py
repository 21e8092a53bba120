#!/usr/bin/env python3
"""Checks that the code above core/ uses the public API only.

Every file of fs/, render/ and tools/ may include: system headers, the
public headers of core/include/tilefs/ (as "tilefs/x.h" or "x.h"),
render/'s own headers, and headers of its own folder. Nothing else: no
header of core/base, core/format, core/filter, ... and no *_internal.h.
The public headers themselves include only each other and system headers.

Exempt: tools/bench/, whose benchmarks write arrays with the format
encoders and measure the engine's internals on purpose.

KNOWN lists files allowed an internal header for a while (none today);
an entry that is no longer needed fails the check too, so the list only
shrinks.

Usage: public_includes.py SOURCE_DIR      check the tree
       public_includes.py --self-test     show that a bad include fails
"""
import os
import re
import shutil
import sys
import tempfile

CHECKED = ("fs", "render", "tools")
EXEMPT_DIRS = (os.path.join("tools", "bench"),)
PUBLIC = os.path.join("core", "include", "tilefs")
KNOWN = {}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def headers(folder):
    if not os.path.isdir(folder):
        return set()
    return {f for f in os.listdir(folder) if f.endswith(".h")}


def core_headers(root):
    out = set()
    for dirpath, _, files in os.walk(os.path.join(root, "core")):
        if os.path.normpath(dirpath) == os.path.normpath(
                os.path.join(root, PUBLIC)):
            continue
        out |= {f for f in files if f.endswith(".h")}
    return out


def check(root, known):
    public = headers(os.path.join(root, PUBLIC))
    render = headers(os.path.join(root, "render"))
    internal = core_headers(root) - public
    problems = []
    used = {}

    def allowed(rel, kind, name, own):
        base = os.path.basename(name)
        if name.startswith("tilefs/"):
            return base in public and name == "tilefs/" + base
        if kind == "<":
            # A system header, unless it names one of core/'s own.
            return base not in internal or "/" in name
        if "/" in name:
            return False
        return name in public or name in render or name in own

    for top in CHECKED:
        for dirpath, _, files in os.walk(os.path.join(root, top)):
            reldir = os.path.relpath(dirpath, root)
            if any(reldir == e or reldir.startswith(e + os.sep)
                   for e in EXEMPT_DIRS):
                continue
            own = headers(dirpath)
            for f in sorted(files):
                if not f.endswith((".c", ".h")):
                    continue
                rel = os.path.join(reldir, f).replace(os.sep, "/")
                with open(os.path.join(dirpath, f), encoding="utf-8") as fh:
                    text = fh.read()
                for kind, name in INCLUDE.findall(text):
                    if allowed(rel, kind, name, own):
                        continue
                    if name in known.get(rel, ()):
                        used.setdefault(rel, set()).add(name)
                        continue
                    problems.append(f"{rel}: includes {kind}{name} "
                                    "(not a public header of "
                                    f"{PUBLIC}, render/ or its folder)")
    for rel, names in known.items():
        for name in sorted(names - used.get(rel, set())):
            problems.append(f"{rel}: no longer includes {name}: "
                            "remove it from KNOWN in public_includes.py")
    pub_dir = os.path.join(root, PUBLIC)
    for f in sorted(public):
        with open(os.path.join(pub_dir, f), encoding="utf-8") as fh:
            text = fh.read()
        for kind, name in INCLUDE.findall(text):
            base = os.path.basename(name)
            if kind == '"' and base not in public:
                problems.append(f"{PUBLIC}/{f}: public header includes "
                                f"internal \"{name}\"")
            elif kind == "<" and base in internal and "/" not in name:
                problems.append(f"{PUBLIC}/{f}: public header includes "
                                f"internal <{name}>")
    return problems


def self_test():
    tmp = tempfile.mkdtemp(prefix="public_includes.")
    try:
        def put(path, text):
            full = os.path.join(tmp, path)
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as fh:
                fh.write(text)
        put(f"{PUBLIC}/tilefs.h", '#include "tfs_err.h"\n')
        put(f"{PUBLIC}/tfs_err.h", "#include <stdint.h>\n")
        put("core/format/tfs_format.h", "\n")
        put("core/read/read_internal.h", "\n")
        put("render/tfs_render.h", '#include "tilefs/tilefs.h"\n')
        put("fs/tfsd.h", "\n")
        put("fs/ok.c", '#include <stdio.h>\n#include "tilefs/tilefs.h"\n'
            '#include "tfs_err.h"\n#include "tfs_render.h"\n'
            '#include "tfsd.h"\n')
        put("tools/bench/b.c", '#include "tfs_format.h"\n')
        if check(tmp, {}):
            return "a clean tree was refused: " + "; ".join(check(tmp, {}))
        bad = [('fs/bad.c', '#include "tfs_format.h"\n'),
               ('tools/bad.c', '#include "../core/read/read_internal.h"\n'),
               ('render/bad.c', '#include "tfsd.h"\n'),
               ('fs/bad.c', '#include <read_internal.h>\n'),
               (f'{PUBLIC}/tfs_err.h', '#include "tfs_format.h"\n')]
        for path, text in bad:
            full = os.path.join(tmp, path)
            keep = open(full).read() if os.path.exists(full) else None
            put(path, text)
            if not check(tmp, {}):
                return f"{path} with {text.strip()} was not refused"
            if keep is None:
                os.remove(full)
            else:
                put(path, keep)
        put("fs/old.c", "\n")
        if not check(tmp, {"fs/old.c": {"tfs_format.h"}}):
            return "a stale KNOWN entry was not refused"
        return None
    finally:
        shutil.rmtree(tmp)


def main():
    if sys.argv[1:] == ["--self-test"]:
        err = self_test()
        if err:
            print("public_includes self-test: " + err)
            return 1
        print("public_includes self-test: ok")
        return 0
    if len(sys.argv) != 2:
        print(__doc__)
        return 2
    problems = check(sys.argv[1], KNOWN)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) past the public API")
        return 1
    print("fs/, render/ and tools/ include only the public API")
    return 0


if __name__ == "__main__":
    sys.exit(main())
