#!/usr/bin/env python3
"""The docs against the program: flags and exit status.

    check_cli_docs.py --root SOURCE_DIR --hdbench BUILD/bin/hdbench

Flags. Every flag the docs (README.md and docs/*.md, evidence.md aside) give a command must be in
that command's `--help`:
- `hdbench <command> ... --flag` and `./run_all.sh ... --flag` (its arguments go to `hdbench run`)
  in code: the command's help (`reference` without a subcommand: any of add, learn, validate);
- after ` -- ` on such a line (flags for the family binaries): some family binary's `--help`, a
  `--<family>.flag` that family's;
- `hdbench-<family> ... --flag`: that binary's `--help` (a binary not built here is reported and
  its flags go unchecked);
- `hdbench-healthcheck ... --flag`: the usage line of share/hdbench/hdbench-healthcheck;
- the flag tables of docs/harness.md: under `## \\`<command>\\``, each row's first cell.
So `hdbench run --lock-timeout-s` (a family binary's flag, offered to run) fails here, while
`hdbench run -- --lock-timeout-s=1800` passes.

Exit status. README.md's table and docs/harness.md's "Exit status" table list exactly 0, 1 and 2,
and the program returns, in situations run here without a GPU, the status the tables give them:
bad usage or input (2), a FAIL line (1), a healthy run checked and compared against its set (0),
and a family binary's bad usage (2).

Exit 0 = the docs agree, 1 = they do not (each problem printed), 2 = bad input.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

SUBCOMMANDS = ("run", "check", "compare", "fleet", "plot", "collect", "report", "schema-doc",
               "reference add", "reference learn", "reference validate")
FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9_.-]*)")
COMMAND = re.compile(r"(?:^|[\s`(/])(?:hdbench|\./run_all\.sh)\s+(run|check|compare|fleet|plot|collect|report|"
                     r"schema-doc|reference(?:\s+(?:add|learn|validate))?)\b(.*)")
RUN_ALL = re.compile(r"(?:^|[\s`(])\./run_all\.sh\b(.*)")
FAMILY_BINARY = re.compile(r"hdbench-(copy|overlap|sync|p2p|allreduce)\b(.*)")
HEALTHCHECK = re.compile(r"hdbench-healthcheck\b(.*)")


def run(cmd: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)


def flags_of(text: str) -> set[str]:
    return {m.split("=")[0].rstrip(".,:;") for m in FLAG.findall(text)}


def code_texts(markdown: str) -> list[tuple[int, str]]:
    """(line, text) of every fenced code line and inline code span."""
    out, fenced = [], False
    for number, line in enumerate(markdown.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            out.append((number, line))
        else:
            out.extend((number, span) for span in re.findall(r"`([^`]+)`", line))
    return out


class Programs:
    def __init__(self, hdbench: Path, root: Path):
        self.hdbench = hdbench
        self.help: dict[str, set[str]] = {}
        for sub in SUBCOMMANDS:
            result = run([str(hdbench), *sub.split(), "--help"])
            if result.returncode != 0:
                raise SystemExit(f"check_cli_docs: `hdbench {sub} --help` exited {result.returncode}")
            self.help[sub] = flags_of(result.stdout)
        self.help["reference"] = set().union(*(self.help[s] for s in SUBCOMMANDS if s.startswith("reference ")))
        self.families: dict[str, set[str]] = {}
        self.missing_families: list[str] = []
        for family in ("copy", "overlap", "sync", "p2p", "allreduce"):
            binary = hdbench.parent / f"hdbench-{family}"
            if not binary.exists():
                self.missing_families.append(family)
                continue
            result = run([str(binary), "--help"])
            self.families[family] = flags_of(result.stdout + result.stderr)
        script = (root / "share/hdbench/hdbench-healthcheck").read_text(encoding="utf-8")
        usage = re.search(r"^#\s+hdbench-healthcheck (.*)$", script, re.M)
        self.healthcheck = flags_of(usage.group(1)) | {"--help"} if usage else set()

    def family_flag_ok(self, flag: str) -> bool:
        if not self.families:
            return True
        prefixed = re.match(r"--([a-z0-9]+)\.(.+)", flag)
        if prefixed and prefixed.group(1) in self.families:
            return f"--{prefixed.group(2)}" in self.families[prefixed.group(1)]
        if prefixed and prefixed.group(1) in self.missing_families:
            return True
        return any(flag in flags for flags in self.families.values())


def check_flag(programs: Programs, command: str, flag: str, where: str, problems: list[str]) -> None:
    command = " ".join(command.split())
    if flag not in programs.help[command]:
        problems.append(f"{where}: `hdbench {command}` has no flag {flag} (not in `hdbench {command} --help`)")


def check_docs(root: Path, programs: Programs) -> list[str]:
    problems: list[str] = []
    pages = [root / "README.md"] + sorted(p for p in (root / "docs").glob("*.md") if p.name != "evidence.md")
    for page in pages:
        text = page.read_text(encoding="utf-8")
        rel = page.relative_to(root)
        for number, code in code_texts(text):
            where = f"{rel}:{number}"
            for match in COMMAND.finditer(code):
                command, rest = match.group(1), match.group(2)
                if match.group(0).lstrip(" `(/").startswith("./run_all.sh"):
                    command, rest = "run", match.group(1) + match.group(2)
                own, _, family_part = rest.partition(" -- ")
                own = re.split(r"[|;&]|\$\(|\bhdbench\b|#", own)[0]
                for flag in flags_of(own):
                    check_flag(programs, command, flag, where, problems)
                if family_part and command == "run":
                    for flag in flags_of(re.split(r"[|;&#]", family_part)[0]):
                        if not programs.family_flag_ok(flag):
                            problems.append(f"{where}: no family binary takes {flag} (after `hdbench run --`)")
            for match in RUN_ALL.finditer(code):
                if COMMAND.search(match.group(0)):
                    continue
                own, _, family_part = match.group(1).partition(" -- ")
                for flag in flags_of(re.split(r"[|;&#]", own)[0]):
                    check_flag(programs, "run", flag, where, problems)
                for flag in flags_of(re.split(r"[|;&#]", family_part)[0]) if family_part else ():
                    if not programs.family_flag_ok(flag):
                        problems.append(f"{where}: no family binary takes {flag} (after `./run_all.sh --`)")
            for match in FAMILY_BINARY.finditer(code):
                family, rest = match.groups()
                if family not in programs.families:
                    continue
                for flag in flags_of(re.split(r"[|;&#]", rest)[0]):
                    if flag not in programs.families[family]:
                        problems.append(f"{where}: hdbench-{family} has no flag {flag} (not in its --help)")
            for match in HEALTHCHECK.finditer(code):
                for flag in flags_of(re.split(r"[|;&#]", match.group(1))[0]):
                    if flag not in programs.healthcheck:
                        problems.append(f"{where}: hdbench-healthcheck has no flag {flag} (its usage line)")
    # docs/harness.md's flag tables, one per `## \`command\`` section.
    command = None
    for number, line in enumerate((root / "docs/harness.md").read_text(encoding="utf-8").splitlines(), 1):
        heading = re.match(r"^##\s+(.*)$", line)
        if heading:
            named = re.match(r"`([a-z-]+)`$", heading.group(1).strip())
            command = named.group(1) if named and named.group(1) in programs.help else None
            continue
        cell = re.match(r"^\|\s*(`--[^|]*)\|", line)
        if command and cell:
            for flag in flags_of(cell.group(1)):
                check_flag(programs, command, flag, f"docs/harness.md:{number}", problems)
    return problems


def readme_exit_table(root: Path) -> dict[int, str]:
    text = (root / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Exit status"):]
    section = section[:section.index("\n## ", 1)]
    return {int(code): meaning for code, meaning in re.findall(r"^\|\s*([0-9]+)\s*\|(.*)\|\s*$", section, re.M)}


def reference_exit_table(root: Path) -> dict[str, dict[int, str]]:
    text = (root / "docs/harness.md").read_text(encoding="utf-8")
    section = text[text.index("## Exit status"):]
    section = section[:section.index("\n## ", 1)]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in section.splitlines() if line.startswith("|")]
    header = rows[0]
    table: dict[str, dict[int, str]] = {h: {} for h in header[1:]}
    for row in rows[2:]:
        for column, cell in zip(header[1:], row[1:]):
            table[column][int(row[0])] = cell
    return table


def column(table: dict[str, dict[int, str]], command: str) -> dict[int, str]:
    for header, cells in table.items():
        if f"`{command}`" in header:
            return cells
    raise SystemExit(f"check_cli_docs: docs/harness.md's exit table has no column for `{command}`")


def documented_code(cells: dict[int, str], phrase: str, what: str, problems: list[str]) -> int | None:
    codes = [code for code, meaning in cells.items() if phrase.lower() in meaning.lower()]
    if len(codes) != 1:
        problems.append(f"{what}: the table should give '{phrase}' exactly one status, it gives {codes}")
        return None
    return codes[0]


def check_exit_status(root: Path, programs: Programs) -> list[str]:
    problems: list[str] = []
    readme, reference = readme_exit_table(root), reference_exit_table(root)
    if set(readme) != {0, 1, 2}:
        problems.append(f"README.md: the exit-status table lists {sorted(readme)}, the program returns 0, 1 and 2")
    for header, cells in reference.items():
        if set(cells) != {0, 1, 2}:
            problems.append(f"docs/harness.md: exit status column {header} lists {sorted(cells)}")
    hdbench = str(programs.hdbench)
    h200 = root / "results/reference/h200"
    member = sorted((h200 / "runs").iterdir())[0]
    gen4 = root / "tests/harness/fixtures/check_runs"
    # (command, its phrase in docs/harness.md's column, the README row's phrase, the command line)
    probes = [
        ("run", "bad usage", "bad usage", [hdbench, "run", "--no-such-flag"]),
        ("check", "bad usage", "bad usage", [hdbench, "check", str(root / "no-such-run")]),
        ("compare", "bad usage", "bad usage", [hdbench, "compare", str(member)]),
        ("fleet", "bad usage", "bad usage", [hdbench, "fleet", str(root / "no-such-run")]),
        ("check", "a FAIL line", "a FAIL line", [hdbench, "check", str(gen4 / "gen4"), "--reference", str(gen4), "--no-files"]),
        ("check", "no FAIL line", "PASS or WARN",
         [hdbench, "check", str(member), "--reference", str(root / "results/reference"), "--no-files"]),
        ("compare", "no gated headline SLOWER", "no headline SLOWER", [hdbench, "compare", str(h200), str(member)]),
    ]
    for command, phrase, readme_phrase, argv in probes:
        result = run(argv)
        for what, cells, wanted in ((f"docs/harness.md, exit status of `{command}`", column(reference, command), phrase),
                                    ("README.md, exit status", readme, readme_phrase)):
            code = documented_code(cells, wanted, what, problems)
            if code is not None and code != result.returncode:
                problems.append(f"{what}: '{wanted}' is documented as {code}, but `{' '.join(argv[1:3])} …` "
                                f"exited {result.returncode}")
    # A family binary's bad usage: docs/harness.md says "2 (bad usage".
    text = (root / "docs/harness.md").read_text(encoding="utf-8")
    said = re.search(r"family binaries exit[^.]*?([0-9]) \(bad usage", text)
    for family, _ in sorted(programs.families.items())[:1]:
        result = run([str(programs.hdbench.parent / f"hdbench-{family}"), "--no-such-flag"])
        if said is None:
            problems.append("docs/harness.md: the family binaries' exit status for bad usage is not stated")
        elif int(said.group(1)) != result.returncode:
            problems.append(f"docs/harness.md: a family binary's bad usage is documented as {said.group(1)}, "
                            f"hdbench-{family} --no-such-flag exited {result.returncode}")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--hdbench", type=Path, required=True)
    args = parser.parse_args()
    if not args.hdbench.exists():
        print(f"check_cli_docs: no hdbench at {args.hdbench}", file=sys.stderr)
        return 2
    programs = Programs(args.hdbench, args.root)
    problems = check_docs(args.root, programs) + check_exit_status(args.root, programs)
    for problem in problems:
        print(problem)
    skipped = f"; family binaries not built here (their flags unchecked): {', '.join(programs.missing_families)}" \
        if programs.missing_families else ""
    print(f"check_cli_docs: {len(problems)} problem(s){skipped}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
