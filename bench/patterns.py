#!/usr/bin/python3
"""Turns `attribution-blueprint rules patterns` output (RE2 syntax, groups already non-capturing:
the command prints what `rg -f` takes) into pattern files for rg, grep -P and grep -E, so the grep
tools search for exactly what the catalogue searches for.

  patterns.py PATTERNS_TXT OUTDIR   ->  OUTDIR/rg.txt  OUTDIR/pcre.txt  OUTDIR/ere.txt

rg:    the patterns as printed, one per line.
pcre:  GNU grep -P takes a single pattern: all patterns joined with '|'.
ere:   POSIX ERE for grep -E: (?:..) -> (..), lazy quantifiers made greedy (same matching
       lines), \\d \\w \\s \\S -> bracket classes, bracket expressions rewritten (a backslash is
       literal inside a POSIX bracket). Patterns grep -E still rejects are dropped and reported.
Prints one summary line to stderr.
"""
import subprocess
import sys


CLASS_ESC = {"d": "0-9", "w": "[:alnum:]_", "s": "[:space:]"}
OUT_ESC = {"d": "[0-9]", "w": "[[:alnum:]_]", "s": "[[:space:]]", "S": "[^[:space:]]",
           "D": "[^0-9]", "W": "[^[:alnum:]_]"}


def bracket(p, i):
    """p[i] == '['; returns (ERE bracket, index after ']')."""
    i += 1
    neg = False
    if i < len(p) and p[i] == "^":
        neg, i = True, i + 1
    items, has_rb, has_dash, has_caret = [], False, False, False
    first = True
    while i < len(p) and (p[i] != "]" or first and False):
        c = p[i]
        if c == "\\":
            e = p[i + 1]
            i += 2
            if e in CLASS_ESC:
                items.append(CLASS_ESC[e])
                continue
            lit = {"r": "\r", "n": "\n", "t": "\t"}.get(e, e)
        elif c == "[" and p.startswith("[:", i):
            j = p.index(":]", i)
            items.append(p[i:j + 2])
            i = j + 2
            continue
        else:
            lit = c
            i += 1
        # a range?
        if i + 1 < len(p) and p[i] == "-" and p[i + 1] != "]":
            hi = p[i + 1]
            if hi == "\\":
                hi = p[i + 2]
                i += 3
            else:
                i += 2
            items.append(lit + "-" + hi)
            continue
        if lit == "]":
            has_rb = True
        elif lit == "-":
            has_dash = True
        elif lit == "^":
            has_caret = True
        elif lit == "\n":
            continue  # lines never contain a newline
        else:
            items.append(lit)
        first = False
    i += 1  # ']'
    body = ("]" if has_rb else "") + "".join(items) + ("^" if has_caret else "") + ("-" if has_dash else "")
    if body == "":
        body = "\r" if neg else "\r"
    return "[" + ("^" if neg else "") + body + "]", i


def to_ere(p):
    out, i = [], 0
    while i < len(p):
        c = p[i]
        if c == "\\":
            e = p[i + 1]
            i += 2
            if e in OUT_ESC:
                out.append(OUT_ESC[e])
            elif e in "rnt":
                out.append({"r": "\r", "n": "[\r]", "t": "\t"}[e])
            elif e in "|{}":
                out.append("[" + e + "]")
            else:
                out.append("\\" + e)
            continue
        if c == "[":
            b, i = bracket(p, i)
            out.append(b)
            continue
        if p.startswith("(?:", i):
            out.append("(")
            i += 3
            continue
        if c == "?" and out and out[-1] in ("*", "+", "?") or c == "?" and out and out[-1].endswith("}") and out[-1] == "}":
            i += 1  # lazy -> greedy
            continue
        out.append(c)
        i += 1
    return "".join(out)


def main():
    src, outdir = sys.argv[1], sys.argv[2]
    pats = [l.rstrip("\n") for l in open(src, encoding="utf-8") if l.strip()]
    if any("(?P<" in p for p in pats):
        sys.exit("patterns.py: %s has named groups; print it with `attribution-blueprint rules patterns`" % src)
    rg = pats
    with open(outdir + "/rg.txt", "w", encoding="utf-8") as f:
        f.write("\n".join(rg) + "\n")
    with open(outdir + "/pcre.txt", "w", encoding="utf-8") as f:
        f.write("|".join("(?:%s)" % p for p in rg) + "\n")
    ere, dropped = [], []
    for p in pats:
        e = to_ere(p)
        r = subprocess.run(["grep", "-E", "-e", e, "/dev/null"], capture_output=True)
        if r.returncode == 2:
            dropped.append(p)
        else:
            ere.append(e)
    with open(outdir + "/ere.txt", "w", encoding="utf-8") as f:
        f.write("\n".join(ere) + "\n")
    print("patterns: %d (rg/pcre), %d converted to ERE, %d dropped" % (len(pats), len(ere), len(dropped)),
          file=sys.stderr)
    for p in dropped:
        print("  ERE dropped: " + p, file=sys.stderr)


if __name__ == "__main__":
    main()
