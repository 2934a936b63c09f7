#!/usr/bin/env python3
"""Where the cotangent crate's machine code goes: the text size of each function of a
release build, grouped by family (SIMD kernel instances by kernel and order), largest
first. Code generation time follows machine code, so this is what the build-time work
of issue 46 (item 8) reads.

    CARGO_TARGET_DIR=/tmp/v0-target RUSTFLAGS="-C symbol-mangling-version=v0" \
        cargo build --release -p cotangent
    python3 scripts/code_size.py /tmp/v0-target/release/deps/libcotangent-*.rlib

(v0 mangling keeps the generic arguments in the symbol names, so the instances of one
kernel at each order can be told apart; `nm -C` demangles them.)
"""
import collections
import os
import re
import subprocess
import sys


def main():
    rlib = max(sys.argv[1:], key=os.path.getmtime)
    out = subprocess.run(["nm", "-S", "-C", rlib], capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        p = line.split(None, 3)
        if len(p) == 4 and p[2] in "tTwW":
            rows.append((int(p[1], 16), p[3].strip()))
    total = sum(s for s, _ in rows)
    fam = collections.Counter()
    orders = collections.defaultdict(list)
    for size, name in rows:
        m = re.search(r"vectorize::Impl<(.*?)(?:<([^<>]*)>)?>>$", name)
        if m:
            key = "simd " + m.group(1)
            orders[key].append((m.group(2) or "").split(",")[-1].strip())
        else:
            # `<X as Trait>::f` is counted under X
            bare = name[1:].split(" as ")[0] if name.startswith("<") else name
            key = "::".join(re.sub(r"<.*", "", bare).split("::")[:6])
        fam[key] += size
    print(f"{total} bytes of machine code in {len(rows)} functions ({rlib})")
    for key, size in fam.most_common(40):
        extra = f"  orders {' '.join(sorted(set(orders[key]), key=lambda o: (len(o), o)))}" if key in orders else ""
        print(f"{size:>9}  {100 * size / total:4.1f}%  {key}{extra}")


if __name__ == "__main__":
    main()
