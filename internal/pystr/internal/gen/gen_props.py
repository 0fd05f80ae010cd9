#!/usr/bin/env python3
"""Writes ../../testdata/py311_props.txt.gz: CPython 3.11's answer, for
every code point, to the per-character questions pkg/pystr reproduces.
TestPropertiesMatchPython reads it. Run from pkg/pystr/internal/gen:
    python3 gen_props.py

Lines (code points in hex):
    space LO HI       str.isspace() holds on LO..HI
    word LO HI        re \\w matches LO..HI
    linebreak C       splitlines() breaks at C
    lower C MAPPED    chr(C).lower() != chr(C); MAPPED is space-separated
    upper C MAPPED    likewise for upper()
    sigma1 LO HI      (chr(c) + "Σ").lower() ends in final ς
    sigma3 LO HI      ("A" + chr(c) + "Σ").lower() ends in final ς
"""
import gzip
import sys

assert sys.version_info[:2] == (3, 11), "needs Python 3.11"

CPS = [c for c in range(0x110000) if not (0xD800 <= c <= 0xDFFF)]


def ranges(name, pred, out):
    start = prev = None
    for c in CPS + [None]:
        ok = c is not None and pred(c)
        if ok and start is not None and c == prev + 1:
            prev = c
            continue
        if start is not None:
            out.write("%s %x %x\n" % (name, start, prev))
            start = None
        if ok:
            start = prev = c


with gzip.open("../../testdata/py311_props.txt.gz", "wt", encoding="utf-8") as out:
    ranges("space", lambda c: chr(c).isspace(), out)
    ranges("word", lambda c: chr(c).isalnum() or c == 0x5F, out)
    for c in CPS:
        if len(("a" + chr(c) + "b").splitlines()) > 1:
            out.write("linebreak %x\n" % c)
    for name, f in (("lower", str.lower), ("upper", str.upper)):
        for c in CPS:
            m = f(chr(c))
            if m != chr(c):
                out.write("%s %x %s\n" % (name, c, " ".join("%x" % ord(x) for x in m)))
    ranges("sigma1", lambda c: (chr(c) + "Σ").lower()[-1] == "ς", out)
    ranges("sigma3", lambda c: ("A" + chr(c) + "Σ").lower()[-1] == "ς", out)
