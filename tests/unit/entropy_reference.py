#!/usr/bin/python3
"""The entropy (KL) calibration of GTC 2017 S7310, step by step, as pytorch-quantization's histogram
calibrator describes it, written independently of dlakit's C++ to work out the values that
tests/unit/quant_test.cpp (Entropy2*) expects. Run: /usr/bin/python3 tests/unit/entropy_reference.py

For each candidate threshold of i bins (start .. n):
  P = bins[0..i) with every count beyond the threshold added to bin i-1, normalised;
  Q = bins[0..i) merged into `levels` levels (bin j -> level j * levels // i), each level's count spread
      evenly over its non-empty bins (empty bins stay empty), normalised;
  KL(P || Q), infinite where P has mass and Q has none.
bins[0] first takes bins[1]'s count. The last candidate with the least KL wins; amax = i * bin width.
"""
from fractions import Fraction
import math


def divergences(bins, levels, start):
    b = list(bins)
    b[0] = b[1]
    out = {}
    for i in range(max(start, levels), len(b) + 1):
        p = b[:i]
        p[-1] += sum(b[i:])
        level_of = [j * levels // i for j in range(i)]
        total, nonempty = {}, {}
        for j in range(i):
            if b[j]:
                total[level_of[j]] = total.get(level_of[j], 0) + b[j]
                nonempty[level_of[j]] = nonempty.get(level_of[j], 0) + 1
        q = [Fraction(total[level_of[j]], nonempty[level_of[j]]) if b[j] else Fraction(0) for j in range(i)]
        sp, sq = sum(p), sum(q)
        kl = 0.0
        for j in range(i):
            if p[j] == 0:
                continue
            if q[j] == 0:
                kl = math.inf
                break
            pn, qn = Fraction(p[j], sp), q[j] / sq
            kl += float(pn) * math.log(float(pn / qn))
        out[i] = kl
    return out


def best(div):
    least = min(div.values())
    return max(i for i, kl in div.items() if kl == least)


CASES = {
    "decaying tail, 2 levels": ([0, 8, 4, 2, 1, 1, 1, 1], 2, 2),
    "empty bins, 2 levels": ([3, 3, 0, 3, 0, 0, 0, 2], 2, 2),
    "all mass in bin 300 of 2048": ([1000 if j == 300 else 0 for j in range(2048)], 128, 128),
    # A body halving every 7 bins (empty from bin 119) and 3 counts every 97 bins up to bin 2037.
    "long sparse tail of 2048": ([(100000 >> (j // 7)) + (3 if j % 97 == 0 else 0) for j in range(2048)],
                                 128, 128),
}

if __name__ == "__main__":
    for name, (bins, levels, start) in CASES.items():
        div = divergences(bins, levels, start)
        i = best(div)
        shown = {k: round(v, 6) for k, v in div.items() if len(div) <= 8 or abs(k - i) <= 2}
        print(f"{name}: amax = {i} bins; KL around it: {shown}")
