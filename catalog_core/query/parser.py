"""Tokenizer and recursive-descent parser for path queries (shape of sqlglot's jsonpath.py).

Grammar (keywords case-insensitive):

    query    := "/" step ("/" step)*
    step     := "*" | "[" expr "]"
    expr     := and_expr ("or" and_expr)*
    and_expr := not_expr ("and" not_expr)*
    not_expr := "not" not_expr | atom
    atom     := "(" expr ")" | "*"
              | "exists" "(" field ")"
              | ("startswith" | "endswith") "(" field "," string ")"
              | field ["not"] "in" "(" literal ("," literal)* ")"
              | operand op operand
    operand  := field | literal
    field    := segment ("." segment)*      segment := identifier | `backquoted`
    literal  := string | number | true | false | null

`*` as an atom is an extension so that `to_text(TrueExpr())` parses back.
Every error is a QuerySyntaxError naming the 0-based position and what was expected.

Limits (each a QuerySyntaxError at the position where it is crossed, never a RecursionError):

    MAX_QUERY_CHARS = 1,000,000   characters in one query or expression text
    MAX_STEPS       = 256         steps in one query (a query of 1,000 steps is refused)
    MAX_NESTING     = 64          levels of '(' and 'not' inside one step

Within them, parsing, seek bounds (`bounds.id_ranges`) and compilation (`evaluate.compile_expr`)
take time and memory linear in the query's length: `and`/`or` chains are n-ary nodes, the bounds
of an `or` are merged once (O(n log n)) and those of an `and` intersected pairwise in a balanced
tree, and wide chains are compiled in groups of `evaluate.WIDTH` terms, one small function each.
"""

from __future__ import annotations

import math
import re
from typing import Any, NamedTuple, NoReturn

from catalog_core.errors import QuerySyntaxError
from catalog_core.query.ast import (
    And,
    Compare,
    EndsWith,
    Exists,
    Expr,
    Field,
    In,
    Literal,
    LiteralValue,
    Not,
    Operand,
    Or,
    Query,
    StartsWith,
    Step,
    TrueExpr,
)

__all__ = ["parse", "parse_expr", "check_text", "tokenize", "Token", "MAX_NESTING", "MAX_STEPS", "MAX_QUERY_CHARS"]

# Deeper nesting is certainly a mistake and would otherwise end in RecursionError.
MAX_NESTING = 64
# A query's steps are nested scans (one generator per step); trees this deep are not queried step by step.
MAX_STEPS = 256
# Longer texts are not queries an agent should send: name fewer ids, or query a parent.
MAX_QUERY_CHARS = 1_000_000
_SHOWN = 160  # characters shown around an error's position when the text is longer than _SHOWN_ALL
_SHOWN_ALL = 500

_WS = re.compile(r"[ \t\r\n\f\v]*")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_OPS = ("!=", "<=", ">=", "==", "=", "<", ">")
_PUNCT = "/*[](),."
_ESCAPES = {'"': '"', "'": "'", "`": "`", "\\": "\\", "/": "/",
            "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


class Token(NamedTuple):
    kind: str  # one of _PUNCT chars, "OP", "STRING", "NUMBER", "IDENT", "QIDENT", "UNKNOWN", "EOF"
    value: Any  # decoded value for STRING/NUMBER/QIDENT, source text otherwise
    pos: int
    end: int


def _fail(text: str, pos: int, expected: str, message: str) -> NoReturn:
    start = 0
    shown = text
    if len(text) > _SHOWN_ALL:  # a window around the position, so a long text makes a short message
        start = max(0, min(pos - _SHOWN // 2, len(text) - _SHOWN))
        shown = ("…" if start else "") + text[start:start + _SHOWN] + ("…" if start + _SHOWN < len(text) else "")
        start -= 1 if start else 0
    shown = shown.replace("\t", " ").replace("\n", " ").replace("\r", " ")
    raise QuerySyntaxError(f"{message}\n  {shown}\n  {' ' * (pos - start)}^", text=text, position=pos,
                           expected=expected)


def _read_quoted(text: str, start: int) -> tuple[str, int]:
    """Decode the quoted string opening at `start`; returns (value, index after the closing quote)."""
    quote = text[start]
    what = "field name" if quote == "`" else "string"
    out: list[str] = []
    i, n = start + 1, len(text)
    while i < n:
        ch = text[i]
        if ch == quote:
            return "".join(out), i + 1
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        esc = text[i + 1] if i + 1 < n else ""
        if esc in _ESCAPES:
            out.append(_ESCAPES[esc])
            i += 2
        elif esc == "u":
            code, i = _read_unicode_escape(text, i)
            out.append(code)
        else:
            shown = "\\" + esc
            _fail(text, i, "an escape: \\\" \\' \\\\ \\/ \\n \\t \\r \\b \\f \\uXXXX",
                  f"bad escape {shown!r} at position {i} in {what}")
    _fail(text, start, f"closing {quote}",
          f"unterminated {what} starting at position {start}: expected closing {quote} before end of input")


def _read_unicode_escape(text: str, i: int) -> tuple[str, int]:
    """`\\uXXXX` at i (JSON style: a UTF-16 surrogate pair may span two escapes)."""
    expected = "\\u followed by 4 hex digits"
    if not _HEX4.match(text, i + 2):
        _fail(text, i, expected, f"bad escape at position {i}: expected {expected}")
    code = int(text[i + 2:i + 6], 16)
    i += 6
    if 0xD800 <= code <= 0xDBFF and text.startswith("\\u", i) and _HEX4.match(text, i + 2):
        low = int(text[i + 2:i + 6], 16)
        if 0xDC00 <= low <= 0xDFFF:
            return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), i + 6
    if 0xD800 <= code <= 0xDFFF:
        _fail(text, i - 6, "a complete UTF-16 surrogate pair",
              f"bad escape at position {i - 6}: lone UTF-16 surrogate \\u{code:04x}")
    return chr(code), i


def _number(text: str, m: re.Match[str]) -> int | float:
    raw = m.group(0)
    try:
        value: int | float = float(raw) if (m.group(1) or m.group(2)) else int(raw)
    except ValueError:  # int() refuses thousands of digits
        value = math.inf
    if isinstance(value, float) and not math.isfinite(value):
        _fail(text, m.start(), "a finite number", f"number {raw[:40]!r} at position {m.start()} is out of range")
    return value


def tokenize(text: str) -> list[Token]:
    tokens: list[Token] = []
    i, n = 0, len(text)
    while True:
        ws = _WS.match(text, i)  # matches the empty string: never None
        i = ws.end() if ws else i
        if i >= n:
            tokens.append(Token("EOF", "", n, n))
            return tokens
        ch = text[i]
        if ch in _PUNCT:
            tokens.append(Token(ch, ch, i, i + 1))
            i += 1
        elif ch in "\"'`":
            value, end = _read_quoted(text, i)
            if ch == "`" and not value:
                _fail(text, i, "a field name", f"empty field name `` at position {i}")
            tokens.append(Token("QIDENT" if ch == "`" else "STRING", value, i, end))
            i = end
        elif (m := _NUMBER.match(text, i)) is not None:
            tokens.append(Token("NUMBER", _number(text, m), i, m.end()))
            i = m.end()
        elif (m := _IDENT.match(text, i)) is not None:
            tokens.append(Token("IDENT", m.group(0), i, m.end()))
            i = m.end()
        else:
            op = next((o for o in _OPS if text.startswith(o, i)), None)
            if op is not None:
                tokens.append(Token("OP", "=" if op == "==" else op, i, i + len(op)))
                i += len(op)
            else:
                # Let the parser report it: it knows what it expected here.
                tokens.append(Token("UNKNOWN", ch, i, i + 1))
                i += 1


_OPERAND_START = ("IDENT", "QIDENT", "STRING", "NUMBER")


_SURROGATE = re.compile("[\ud800-\udfff]")


def check_text(text: str) -> None:
    """Refuse text that is not valid Unicode: an unpaired surrogate (e.g. from a bad `\\ud800`
    escape) cannot travel as UTF-8, so the embedded and the remote catalog both refuse it here,
    with its position, instead of one matching nothing and the other failing on the wire."""
    m = _SURROGATE.search(text)
    if m is not None:
        _fail(_SURROGATE.sub("?", text), m.start(), "valid Unicode text",
              f"unpaired surrogate U+{ord(m.group()):04X} at position {m.start()}: the query is not valid "
              "Unicode; remove it or send the character it was meant to be")


class _Parser:
    def __init__(self, text: str) -> None:
        if not isinstance(text, str):
            raise TypeError(f"a query is text, not {type(text).__name__}")
        self.text = text
        if len(text) > MAX_QUERY_CHARS:
            _fail(text, MAX_QUERY_CHARS, f"at most {MAX_QUERY_CHARS:,} characters",
                  f"query too long: {len(text):,} characters, at most {MAX_QUERY_CHARS:,} are allowed "
                  f"(position {MAX_QUERY_CHARS:,} is past the limit); name fewer ids or query a parent instead")
        check_text(text)
        self.tokens = tokenize(text)
        self.i = 0
        self.depth = 0

    # -- token helpers

    @property
    def tok(self) -> Token:
        return self.tokens[self.i]

    def peek(self, ahead: int = 1) -> Token:
        return self.tokens[min(self.i + ahead, len(self.tokens) - 1)]

    def keyword(self, tok: Token | None = None) -> str | None:
        tok = tok or self.tok
        return tok.value.lower() if tok.kind == "IDENT" else None

    def advance(self) -> Token:
        tok = self.tok
        if tok.kind != "EOF":
            self.i += 1
        return tok

    def found(self, tok: Token) -> str:
        if tok.kind == "EOF":
            return "end of input"
        return repr(self.text[tok.pos:tok.end][:30])

    def error(self, expected: str, tok: Token | None = None) -> NoReturn:
        tok = tok or self.tok
        _fail(self.text, tok.pos, expected,
              f"expected {expected} at position {tok.pos} (found {self.found(tok)})")

    def expect(self, kind: str, expected: str | None = None) -> Token:
        if self.tok.kind != kind:
            self.error(expected or repr(kind))
        return self.advance()

    def nest(self, opener: Token) -> None:
        self.depth += 1
        if self.depth > MAX_NESTING:
            pos = opener.pos
            _fail(self.text, pos, f"at most {MAX_NESTING} levels of nesting",
                  f"expression nested too deeply at position {pos}: at most {MAX_NESTING} levels of "
                  "parentheses and 'not' are allowed")

    # -- grammar

    def query(self) -> Query:
        if self.tok.kind == "EOF":
            _fail(self.text, self.tok.pos, "'/'", f"empty query: expected '/' at position {self.tok.pos}, "
                                                  "e.g. /[obj_id = \"wh\"]/*")
        self.expect("/", "'/' (a query starts at the root, e.g. /[obj_id = \"wh\"]/*)")
        steps = [self.step()]
        while self.tok.kind == "/":
            if len(steps) == MAX_STEPS:
                pos = self.tok.pos
                _fail(self.text, pos, f"at most {MAX_STEPS} steps",
                      f"query too deep: step {MAX_STEPS + 1} starts at position {pos}, at most {MAX_STEPS} "
                      "steps are allowed; query a nearer ancestor instead")
            self.advance()
            steps.append(self.step())
        if self.tok.kind != "EOF":
            self.error("'/' or end of query")
        return Query(tuple(steps), self.text)

    def step(self) -> Step:
        if self.tok.kind == "*":
            self.advance()
            return Step(TrueExpr())
        if self.tok.kind != "[":
            self.error("a step: '*' or '[' expression ']'")
        self.advance()
        expr = self.expr()
        self.expect("]", "']'" if self.tok.kind in ("EOF", ")") else "'and', 'or' or ']'")
        return Step(expr)

    def expr(self) -> Expr:
        items = [self.and_expr()]
        while self.keyword() == "or":
            self.advance()
            items.append(self.and_expr())
        return items[0] if len(items) == 1 else Or(tuple(items))

    def and_expr(self) -> Expr:
        items = [self.not_expr()]
        while self.keyword() == "and":
            self.advance()
            items.append(self.not_expr())
        return items[0] if len(items) == 1 else And(tuple(items))

    def not_expr(self) -> Expr:
        if self.keyword() == "not":
            self.nest(self.advance())
            item = self.not_expr()
            self.depth -= 1
            return Not(item)
        return self.atom()

    def atom(self) -> Expr:
        tok = self.tok
        if tok.kind == "(":
            self.nest(self.advance())
            expr = self.expr()
            self.depth -= 1
            self.expect(")", "')'" if self.tok.kind in ("EOF", "]") else "'and', 'or' or ')'")
            return expr
        if tok.kind == "*":
            self.advance()
            return TrueExpr()
        kw = self.keyword()
        if kw in ("exists", "startswith", "endswith") and self.peek().kind == "(":
            return self.function(kw)
        if tok.kind not in _OPERAND_START or kw in ("and", "or", "not", "in"):
            self.error("an expression: a field, a literal, '(', 'not', exists(...), startswith(...) "
                       "or endswith(...)")
        left = self.operand()
        if isinstance(left, Field):
            if self.keyword() == "in":
                self.advance()
                return In(left, self.literal_list())
            if self.keyword() == "not" and self.keyword(self.peek()) == "in":
                self.advance()
                self.advance()
                return Not(In(left, self.literal_list()))
        if self.tok.kind != "OP":
            self.error("a comparison operator (= != < <= > >=)" + (" or 'in'" if isinstance(left, Field) else ""))
        op = self.advance().value
        if self.tok.kind not in _OPERAND_START or self.keyword() in ("and", "or", "not", "in"):
            self.error("a field or a literal")
        return Compare(left, op, self.operand())

    def function(self, name: str) -> Expr:
        self.advance()
        self.expect("(", "'('")
        fld = self.field(f"a field as the first argument of {name}()")
        if name == "exists":
            self.expect(")", "')'")
            return Exists(fld)
        self.expect(",", "','")
        if self.tok.kind != "STRING":
            self.error(f"a string literal as the second argument of {name}()")
        arg = self.advance().value
        self.expect(")", "')'")
        return StartsWith(fld, arg) if name == "startswith" else EndsWith(fld, arg)

    def operand(self) -> Operand:
        tok = self.tok
        if tok.kind in ("STRING", "NUMBER"):
            self.advance()
            return Literal(tok.value)
        kw = self.keyword()
        if kw in ("true", "false", "null"):
            self.advance()
            return Literal({"true": True, "false": False, "null": None}[kw])
        return self.field("a field or a literal")

    def field(self, expected: str) -> Field:
        if self.tok.kind not in ("IDENT", "QIDENT") or self.keyword() in ("and", "or", "not", "in",
                                                                          "true", "false", "null"):
            self.error(expected)
        parts = [self.advance().value]
        while self.tok.kind == ".":
            self.advance()
            # After a dot every identifier is a name, keywords included: `stats.in` is fine.
            if self.tok.kind not in ("IDENT", "QIDENT"):
                self.error("a field name after '.'")
            parts.append(self.advance().value)
        return Field(tuple(parts))

    def literal_list(self) -> tuple[LiteralValue, ...]:
        self.expect("(", "'(' after 'in'")
        values = [self.literal()]
        while self.tok.kind == ",":
            self.advance()
            values.append(self.literal())
        self.expect(")", "',' or ')'")
        return tuple(values)

    def literal(self) -> LiteralValue:
        tok = self.tok
        if tok.kind in ("STRING", "NUMBER"):
            self.advance()
            value: LiteralValue = tok.value
            return value
        kw = self.keyword()
        if kw in ("true", "false", "null"):
            self.advance()
            return {"true": True, "false": False, "null": None}[kw]
        self.error("a literal (string, number, true, false or null)")


def parse(text: str) -> Query:
    """Parse a path query such as `/[obj_id = "wh"]/*/[obj_type = "table"]`."""
    return _Parser(text).query()


def parse_expr(text: str) -> Expr:
    """Parse a bare boolean expression (no slashes or brackets), e.g. a plan_files `where`."""
    p = _Parser(text)
    if p.tok.kind == "EOF":
        _fail(text, p.tok.pos, "an expression", f"empty expression: expected an expression at position {p.tok.pos}")
    expr = p.expr()
    if p.tok.kind != "EOF":
        p.error("'and', 'or' or end of expression")
    return expr
