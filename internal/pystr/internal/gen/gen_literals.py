#!/usr/bin/env python3
"""Writes ../../testdata/py311_literals.jsonl.gz: sources for
ast.literal_eval, generated at random from a grammar of Python literals
(plus mutations of them, most of which are no literal), with CPython
3.11's answer: {"src", "ok": true, "str", "repr"} or {"src", "ok": false}.
Sources whose value pkg/pystr does not reproduce by design (a set of
several members, a lone surrogate) are left out.
TestLiteralEvalMatchesPython reads the file. Run from
pkg/pystr/internal/gen:  python3 gen_literals.py [SEED [OUT]]
"""
import ast
import gzip
import json
import random
import sys

assert sys.version_info[:2] == (3, 11), "needs Python 3.11"
rng = random.Random(int(sys.argv[1]) if len(sys.argv) > 1 else 23)
OUT = sys.argv[2] if len(sys.argv) > 2 else "../../testdata/py311_literals.jsonl.gz"

CHARS = ["a", "Z", "é", "ß", "İ", "Σ", "€", "’", "“", "東", "😀", " ", "\t", "'", '"', "\\", "\n",
         "\x00", "\x1c", "\x85", "\u2028", "\ufeff", "\u200b", "\u00a0", "#", ",", "(", ")", "[", "]", "0", "9", "_"]
ESCAPES = ["\\n", "\\t", "\\\\", "\\'", '\\"', "\\a", "\\x41", "\\xe9", "\\x4", "\\u00e9", "\\u20ac", "\\U0001F600",
           "\\U00110000", "\\N{BULLET}", "\\N{latin small letter a}", "\\N{NO SUCH NAME}", "\\101", "\\777", "\\0",
           "\\d", "\\q", "\\\n", "\\ud800"]


def rand_text(n):
    out = []
    for _ in range(n):
        out.append(rng.choice(ESCAPES) if rng.random() < 0.25 else rng.choice(CHARS))
    return "".join(out)


def rand_string():
    prefix = rng.choice(["", "", "", "r", "u", "b", "R", "B", "br", "Rb", "f", "rf", "U", "ur"])
    quote = rng.choice(["'", '"', "'''", '"""'])
    return prefix + quote + rand_text(rng.randint(0, 6)) + quote


def rand_number():
    k = rng.randint(0, 12)
    d = lambda: str(rng.randint(0, 10 ** rng.randint(1, 20)))
    return [
        lambda: d(),
        lambda: "0" * rng.randint(1, 3) + d(),
        lambda: d() + "." + d(),
        lambda: "." + d(),
        lambda: d() + ".",
        lambda: d() + rng.choice(["e", "E"]) + rng.choice(["", "+", "-"]) + str(rng.randint(0, 400)),
        lambda: rng.choice(["0x", "0X", "0o", "0b"]) + rng.choice(["1f", "17", "101", "_1", "", "g"]),
        lambda: "1_000" + rng.choice(["", "_", "__0", ".5"]),
        lambda: d() + rng.choice(["j", "J"]),
        lambda: d() + "." + d() + "e-5j",
        lambda: rng.choice(["1e999", "-1e999", "1e-400", "0.1", "1e16", "1e15", "123456789.123456789", "0.0001", "0.00001"]),
        lambda: d() + rng.choice(["+", "-", " + ", " - "]) + d() + "j",
        lambda: "(" + d() + ")",
    ][k]()


def rand_expr(depth=0):
    r = rng.random()
    if depth > 2 or r < 0.45:
        atom = rng.choice([rand_string, rand_string, rand_number, rand_number,
                           lambda: rng.choice(["True", "False", "None", "...", "set()", "set( )", "Ellipsis", "x", "nan"])])()
        if rng.random() < 0.2:
            atom = rng.choice(["-", "+", "- ", "--", "~", "not "]) + atom
        if rng.random() < 0.1:
            atom = atom + " " + rand_string()
        return atom
    items = [rand_expr(depth + 1) for _ in range(rng.randint(0, 3))]
    sep = rng.choice([", ", ",", " , ", ",\n", ", # c\n"])
    body = sep.join(items) + (rng.choice([",", ""]) if items else "")
    kind = rng.random()
    if kind < 0.45:
        return "[" + body + "]"
    if kind < 0.75:
        return "(" + body + ")"
    if kind < 0.85:
        return body or "1"
    if kind < 0.95:
        return "{" + ", ".join("%s: %s" % (rand_expr(depth + 1), rand_expr(depth + 1)) for _ in range(rng.randint(0, 2))) + "}"
    return "{" + rand_expr(depth + 1) + "}"


def mutate(s):
    if not s:
        return s
    i = rng.randrange(len(s))
    op = rng.random()
    if op < 0.4:
        return s[:i] + s[i + 1:]
    if op < 0.8:
        return s[:i] + rng.choice(CHARS + ["\\", "'", "]", ":", "j", "e", "\r\n", "\r"]) + s[i:]
    return s[:i] + s[i:] * 2


def wrap(s):
    r = rng.random()
    if r < 0.1:
        return rng.choice([" ", "\t", "\n", " \n", "\n  ", "# c\n", "\f"]) + s
    if r < 0.2:
        return s + rng.choice([" ", "\n", "  # c", "\n\n", " \\\n", "\n  x", "\r\n"])
    return s


def unsupported(v):
    if isinstance(v, (set, frozenset)) and len(v) > 1:
        return True
    if isinstance(v, str):
        return any(0xD800 <= ord(c) <= 0xDFFF for c in v)
    if isinstance(v, (list, tuple, set, frozenset)):
        return any(unsupported(x) for x in v)
    if isinstance(v, dict):
        return any(unsupported(k) or unsupported(x) for k, x in v.items())
    return False


seen = set()
with gzip.open(OUT, "wt", encoding="utf-8") as out:
    n = 0
    while n < 6000:
        s = wrap(rand_expr())
        if rng.random() < 0.3:
            s = mutate(s)
        if s in seen:
            continue
        seen.add(s)
        try:
            v = ast.literal_eval(s)
        except Exception:
            rec = {"src": s, "ok": False}
        else:
            if unsupported(v):
                continue
            rec = {"src": s, "ok": True, "str": str(v), "repr": repr(v)}
        out.write(json.dumps(rec, ensure_ascii=False) + "\n")
        n += 1
