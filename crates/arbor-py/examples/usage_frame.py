"""Tokens and cost per session: every session under a sessions root in a
pandas DataFrame.

    python usage_frame.py [SESSIONS_ROOT]     (default: ~/.pi/agent/sessions)

One row per session: its id, working directory, name, number of entries and
of assistant messages, and the usage those messages report (input and output
tokens, cache reads and writes, total tokens, cost in USD), summed over
every branch: what was paid for, not only the active path. Prints how many
sessions it loaded and how long that took, the costliest sessions and the
totals per working directory.
"""

import sys
import time
from pathlib import Path

import pandas as pd

import arbor_sessions as arbor

COUNTS = ["input", "output", "cacheRead", "cacheWrite"]


def printable(text):
    """Session text as it may reach a terminal: control characters (an
    escape sequence in a session name) shown as U+FFFD."""
    return "".join(c if c.isprintable() else "\ufffd" for c in text)


def session_row(session):
    """The usage of one session's assistant messages, on every branch."""
    row = {key: 0 for key in COUNTS}
    row.update(totalTokens=0, cost=0.0, assistant=0, entries=len(session))
    for entry in session.entries():
        if entry.role != "assistant":
            continue
        row["assistant"] += 1
        usage = entry.message.get("usage") or {}
        counts = {key: usage.get(key) or 0 for key in COUNTS}
        for key, n in counts.items():
            row[key] += n
        # Old files may lack totalTokens: pi sums the four counts then.
        row["totalTokens"] += usage.get("totalTokens") or sum(counts.values())
        row["cost"] += (usage.get("cost") or {}).get("total") or 0.0
    return row


def usage_frame(root):
    """The DataFrame of every session under `root`, newest first."""
    sessions = arbor.Sessions(root)
    rows = []
    for info in sessions.listing():
        with arbor.open(info["path"]) as session:
            row = session_row(session)
        row.update(
            id=printable(info["id"]),
            cwd=printable(info["cwd"]),
            name=printable(info.get("name") or info["firstMessage"][:40]),
            modified=info["modified"],
        )
        rows.append(row)
    columns = ["id", "cwd", "name", "modified", "entries", "assistant", *COUNTS, "totalTokens", "cost"]
    frame = pd.DataFrame.from_records(rows, columns=columns)
    frame["modified"] = pd.to_datetime(frame["modified"])
    return frame


def main():
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.home() / ".pi" / "agent" / "sessions"
    start = time.perf_counter()
    frame = usage_frame(root)
    seconds = time.perf_counter() - start
    print(f"{len(frame)} sessions from {root} in {seconds:.2f} s")
    if frame.empty:
        return
    total = frame[["totalTokens", "cost"]].sum()
    print(f"{int(total['totalTokens']):,} tokens, ${total['cost']:.2f} in all")
    with pd.option_context("display.width", 120, "display.max_columns", 12):
        print("\nthe costliest sessions:")
        print(frame.nlargest(5, "cost")[["id", "name", "assistant", "totalTokens", "cost"]].to_string(index=False))
        print("\nper working directory:")
        by_cwd = frame.groupby("cwd").agg(sessions=("id", "size"), tokens=("totalTokens", "sum"), cost=("cost", "sum"))
        print(by_cwd.sort_values("cost", ascending=False).head(10).to_string())


if __name__ == "__main__":
    main()
