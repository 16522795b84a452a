#!/usr/bin/env python3
"""Runs attngen-tune briefly (one scheme, decode, host target) into a file holding an entry of the same
kind for any CPU vendor and one for another vendor, and checks what it wrote: both kept as they were,
and one entry for this machine's vendor whose winner passed the reference check, a playoff of the hand
schedule, the earlier entry and a candidate of the search over five rounds, timed cold (decode), and a
winner chosen by the paired rule (tools/tune/playoff.h) against the earlier entry."""
import json
import os
import statistics
import subprocess
import sys
import tempfile

tuner = sys.argv[1]
def cpu_vendor():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("vendor_id"):
                return line.split(":", 1)[1].strip()
    return ""


vendor = cpu_vendor()
earlier = [
    {"scheme": "sdpa", "options": "", "shape_class": "decode", "head_dim": 64,
     "params": {"query_tile": 1, "key_chunk": 256, "split_keys": 0, "grouped_decode_key_runs": 2}},
    {"scheme": "sdpa", "options": "", "shape_class": "decode", "head_dim": 64, "cpu_vendor": "OtherVendor",
     "params": {"query_tile": 1, "key_chunk": 128}},
]
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "tuned.json")
    with open(out, "w") as f:
        json.dump({"entries": earlier}, f)
    subprocess.run([tuner, "--scheme", "sdpa", "--shape", "decode", "--budget", "2", "--repetitions", "1",
                    "--autoschedulers", "none", "--target", "host", "--out", out], check=True)
    with open(out) as f:
        tuned = json.load(f)

entries = tuned["entries"]
if vendor:
    assert len(entries) == 3 and entries[:2] == earlier, entries
    entry = entries[2]
else:  # no vendor to name: the entry for any vendor is this machine's, replaced in place
    assert len(entries) == 2 and entries[1] == earlier[1], entries
    entry = entries[0]
assert entry["cpu_vendor"] == vendor and entry["machine"].get("vendor", "") == vendor, (entry["cpu_vendor"], vendor)
assert entry["scheme"] == "sdpa" and entry["shape_class"] == "decode", entry
assert entry["tuning_shapes"] == ["(1,32,1,4096,64) causal", "(1,32,1,4096,64) kv8 causal"], entry["tuning_shapes"]
assert entry["timing"] == "cold: caches evicted before each call", entry["timing"]
playoff = entry["playoff"]
assert 2 <= len(playoff) <= 3, playoff
assert all(len(f["gflops_rounds"]) == 5 and min(f["gflops_rounds"]) > 0 for f in playoff), playoff
medians = [statistics.median(f["gflops_rounds"]) for f in playoff]
# The incumbent: the earlier entry (for any vendor: tile 1, chunk 256, head-group tasks, 2 key runs), measured
# again.
incumbents = [n for n, f in enumerate(playoff) if f["incumbent"]]
assert len(incumbents) == 1 and playoff[incumbents[0]]["candidate"].startswith("tile 1 chunk 256"), playoff
assert playoff[incumbents[0]]["candidate"].endswith(" runs 2"), playoff[incumbents[0]]
incumbent = incumbents[0]
# Paired: each finalist's median ratio to the incumbent's rate in the same round; a winner other than the
# incumbent has one of at least 1.02 and was faster in more than half of the rounds, and the highest.
ratios = []
for n, f in enumerate(playoff):
    paired = [a / b for a, b in zip(f["gflops_rounds"], playoff[incumbent]["gflops_rounds"])]
    ratios.append(statistics.median(paired))
    assert abs(f["median_ratio_to_incumbent"] - ratios[-1]) < 1e-9, (f, ratios[-1])
    assert f["rounds_faster"] == (0 if n == incumbent else sum(r > 1 for r in paired)), f
qualified = [n for n, f in enumerate(playoff)
             if n != incumbent and ratios[n] >= 1.02 and 2 * f["rounds_faster"] > 5]
best = max(qualified, key=lambda n: ratios[n]) if qualified else incumbent
assert abs(entry["gflops"]["tuned"] - medians[best]) < 1e-9 * medians[best], (entry["gflops"], medians)
assert abs(entry["gflops"]["hand"] - medians[0]) < 1e-9 * medians[0], (entry["gflops"], medians)
p = entry["params"]
described = f"tile {p['query_tile']} chunk {p['key_chunk']}"
assert playoff[best]["candidate"].startswith(described), (playoff[best], p)
# Decode entries record the key runs where they take effect (head-group tasks over whole chunks), and
# candidates name them there only: a split-K one differs in nothing else.
runs_take_effect = p.get("split_keys", 1) == 0 and p.get("merge", "twopass") == "twopass" and \
    p.get("trim_chunk_keys", 0) == 0
if runs_take_effect:
    assert p["grouped_decode_key_runs"] in (1, 2, 4), p
    assert playoff[best]["candidate"].endswith(f" runs {p['grouped_decode_key_runs']}"), (playoff[best], p)
else:
    assert "grouped_decode_key_runs" not in p and " runs " not in playoff[best]["candidate"], (playoff[best], p)
for f in playoff:
    c = f["candidate"]
    assert (" runs " in c) == (" split" not in c and " online" not in c and " untrimmed" in c), c
print(f"tuner smoke: winner {playoff[best]['candidate']} at {medians[best]:.1f} GFLOP/s "
      f"({ratios[best]:.3f}x the incumbent's rate), hand {medians[0]:.1f}, {len(playoff)} finalists")
