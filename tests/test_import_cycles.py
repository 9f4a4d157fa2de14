"""No module imports itself in a circle, in any package (import-linter has no contract for this).

The graph is grimp's (import-linter's own): every import, also those inside functions, since a lazy
import that closes a circle still ties the modules together.
"""

from __future__ import annotations

import grimp

PACKAGES = ("audio", "face", "agent_link", "device", "tests")

KNOWN_CYCLES: tuple[frozenset[str], ...] = ()
"""Cycles known and owned elsewhere (none left: the sinks' shared base is ``audio.edges.stream_sink``)."""


def import_cycles(imports: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (or a module importing itself)
    of the graph ``imports`` (module -> modules it imports), by Tarjan's algorithm, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    for root in sorted(imports):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(imports.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(imports.get(nxt, ()))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members: set[str] = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    members.add(top)
                    if top == node:
                        break
                if len(members) > 1 or node in imports.get(node, ()):
                    found.append(frozenset(members))
    return found


def test_cycles_are_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}, "f": {"d"}}
    assert sorted(map(sorted, import_cycles(graph))) == [["a", "b", "c"], ["e"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_imports_itself_in_a_circle() -> None:
    graph = grimp.build_graph(*PACKAGES)
    imports = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    new = [sorted(c) for c in import_cycles(imports) if c not in KNOWN_CYCLES]
    assert new == [], f"import cycles: {new}"
