#!/usr/bin/env python3
"""Runs every entry of catalogue.tsv: each bad input must be refused with a
non-zero exit (not a signal), a message containing the expected text (which
names the problem, and its location where there is one), and no sanitizer
report. Prints one line per entry and a summary; exits 1 on any failure.

    run_catalogue.py CATALOGUE BIN_DIR INPUTS_DIR TMP_DIR [--show]
"""

import os
import shlex
import subprocess
import sys


def main():
    catalogue, bin_dir, inputs, tmp = sys.argv[1:5]
    show = "--show" in sys.argv
    src = os.path.dirname(os.path.abspath(catalogue))
    places = {
        "{kilnc}": os.path.join(bin_dir, "tools", "kilnc", "kilnc"),
        "{kiln-run}": os.path.join(bin_dir, "tools", "kiln-run", "kiln-run"),
        "{in}": inputs,
        "{tmp}": tmp,
        "{errors}": os.path.join(src, "..", "Frontend", "errors"),
        "{examples}": os.path.join(src, "..", "..", "examples"),
        "{fuzz}": os.path.join(src, "..", "fuzz", "regressions"),
    }
    failures, count, formats = 0, 0, {}
    seen = set()
    for number, line in enumerate(open(catalogue), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.rstrip("\n").split("\t")
        if len(fields) != 4:
            print(f"catalogue.tsv:{number}: expected 4 tab-separated fields")
            return 1
        ident, fmt, command, expected = fields
        if ident in seen:
            print(f"catalogue.tsv:{number}: duplicate id {ident}")
            return 1
        seen.add(ident)
        for key, value in places.items():
            command = command.replace(key, value)
        p = subprocess.run(shlex.split(command), capture_output=True, text=True, errors="replace",
                           timeout=120)
        output = p.stdout + p.stderr
        problems = []
        if p.returncode <= 0 or p.returncode >= 128:
            problems.append(f"exit status {p.returncode}")
        if expected not in output:
            problems.append(f"no '{expected}' in the message")
        if "Sanitizer" in output or "runtime error:" in output:
            problems.append("a sanitizer report")
        count += 1
        formats[fmt] = formats.get(fmt, 0) + 1
        status = "ok" if not problems else "FAIL: " + "; ".join(problems)
        print(f"{ident:32} {fmt:6} {status}")
        if problems or show:
            print("    " + output.strip().replace("\n", "\n    ")[:1500])
        failures += bool(problems)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(formats.items()))
    print(f"{count} bad inputs ({summary}): {count - failures} refused cleanly, {failures} not")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
