"""Every error message thrown by csrc/*.cpp is one string literal or one ``msg::cat(...)``.

Why (csrc/msg.h): on the project's H200 image a c10 error whose message inserts a number into a
stream kills the process instead of raising; ``msg::cat`` builds the text without streams and
rejects numbers at compile time, so this test only has to see that every message goes through it.
"""

import pathlib
import re

CSRC = pathlib.Path(__file__).resolve().parents[1] / "csrc"
MACROS = ("TORCH_CHECK", "TORCH_CHECK_TYPE", "TORCH_CHECK_VALUE", "TORCH_CHECK_INDEX", "TORCH_INTERNAL_ASSERT",
          "C10_THROW_ERROR", "AT_ERROR", "TORCH_WARN")
STREAMS = ("ostringstream", "stringstream", "<sstream>", "std::cout", "std::cerr", " << ")
LITERALS = re.compile(r'("([^"\\]|\\.)*"\s*)+')


def _without_comments(src: str) -> str:
    src = re.sub(r"/\*.*?\*/", "", src, flags=re.S)
    return re.sub(r"//[^\n]*", "", src)


def _call_args(src: str, open_paren: int) -> list[str]:
    """Top-level comma-separated arguments of the call whose '(' is at ``open_paren``."""
    depth, cur, out, in_str, i = 0, [], [], False, open_paren
    while True:
        c = src[i]
        if in_str:
            cur.append(c)
            if c == "\\":
                cur.append(src[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            cur.append(c)
        elif c in "([{":
            depth += 1
            if depth > 1:
                cur.append(c)
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                out.append("".join(cur).strip())
                return out
            cur.append(c)
        elif c == "," and depth == 1:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(c)
        i += 1


def test_binding_messages_use_msg_cat():
    sites, bad = 0, []
    files = sorted(CSRC.glob("*.cpp"))
    assert files, "no csrc/*.cpp found"
    for f in files:
        src = _without_comments(f.read_text())
        bad += [f"{f.name}: uses {tok!r}" for tok in STREAMS if tok in src]
        for m in re.finditer(r"\b(" + "|".join(MACROS) + r")\s*\(", src):
            sites += 1
            message = _call_args(src, m.end() - 1)[1:]  # after the condition / the error type
            ok = len(message) == 1 and (LITERALS.fullmatch(message[0]) or message[0].startswith("msg::cat(")
                                        or message[0] == "p.msg")
            if not ok:
                bad.append(f"{f.name}:{src.count(chr(10), 0, m.start()) + 1}: {m.group(1)} message {message}")
    assert sites > 50, f"only {sites} error sites found: the scan is broken"
    assert not bad, "\n".join(bad)


def test_the_check_catches_a_number():
    src = 'TORCH_CHECK(nt == 1, "nt: expected 1, got ", nt);'
    message = _call_args(src, src.index("("))[1:]
    assert len(message) == 2  # what test_binding_messages_use_msg_cat reports as bad
