"""The in-memory LRU that the manifest, delete and relation caches keep their values in (sparkberg.lru)."""
from sparkberg.lru import LRU


def test_the_least_recently_used_go_first_past_the_weight_bound():
    kept = LRU()
    kept.put("a", "A", 4, max_weight=10)
    kept.put("b", "B", 4, max_weight=10)
    assert kept.get("a") == "A"  # (now the most recently used)
    kept.put("c", "C", 4, max_weight=10)  # 12: b goes
    assert (kept.get("a"), kept.get("b"), kept.get("c")) == ("A", None, "C") and kept.weight == 8
    kept.put("big", "X", 50, max_weight=10)  # heavier than the bound alone: the others go, the newest stays
    assert len(kept) == 1 and kept.get("big") == "X" and kept.weight == 50


def test_the_entries_bound_and_a_key_kept_once():
    kept = LRU()
    for k in "abcd":
        kept.put(k, k.upper(), max_entries=3)
    assert len(kept) == 3 and kept.get("a") is None and kept.get("d") == "D"
    kept.put("d", "other", max_entries=3)  # (a value is kept for d already)
    assert kept.get("d") == "D" and kept.weight == 3
    kept.clear()
    assert len(kept) == 0 and kept.weight == 0 and kept.get("d") is None
