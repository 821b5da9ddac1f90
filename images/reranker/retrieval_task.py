"""A real retrieval task built from text the Python interpreter ships, for judging precision.

Nothing can be downloaded where models are prepared and benchmarked, but every interpreter
carries thousands of documented callables and the language reference's help topics. Each one is
a (query, relevant passage) pair written by a person:

- a documented class, function or method of a fixed list of pure-Python standard-library
  modules: query = the docstring's summary (its first paragraph), passage = the rest of it;
- a help topic (`pydoc_data.topics`): query = the topic's title ("The "assert" statement"),
  passage = its text.

Queries are split by *module* (topics count as one module) into train, validation and test,
so a held-out query's module never appears in training: the split measures retrieval, not
memorised vocabulary. Choices made by looking at scores (which int8 recipe to try for the
default) use the validation split; the test split only gives the verdict. Each query is
ranked against its own passage and `NEGATIVES` others: half from its module (hard: same
subject, same words) and half from the rest of its split. Everything is a pure function of the
interpreter's text and `seed`; the same interpreter gives the same task.

Stdlib only: `prepare.py` evaluates a reduced precision with it, with no extra dependency.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import random
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

#: Pure-Python modules whose public API is documented in prose (no GUI, no side effects on
#: import, present in CPython 3.11 to 3.13).
MODULES: tuple[str, ...] = (
    "abc", "argparse", "ast", "asyncio", "base64", "cmd", "codecs",
    "collections", "concurrent.futures", "configparser", "contextlib", "csv",
    "dataclasses", "datetime", "decimal", "difflib", "doctest", "email.message", "enum",
    "filecmp", "fileinput", "fnmatch", "fractions", "ftplib", "functools", "getopt",
    "glob", "gzip", "hashlib", "heapq", "hmac", "html.parser", "http.client", "http.cookiejar",
    "http.server", "imaplib", "importlib", "inspect", "io", "ipaddress", "json",
    "linecache", "locale", "logging", "logging.handlers", "lzma", "mimetypes",
    "numbers", "operator", "optparse", "os", "pathlib", "pdb",
    "pickle", "pickletools", "pkgutil", "platform", "poplib", "profile",
    "pstats", "queue", "quopri", "random", "re", "sched", "secrets", "selectors",
    "shelve", "shutil", "smtplib", "socket", "socketserver", "ssl",
    "statistics", "string", "subprocess", "sysconfig", "tarfile", "tempfile",
    "textwrap", "threading", "timeit", "tokenize", "trace", "traceback", "types",
    "typing", "unittest", "urllib.parse", "urllib.request", "uuid", "warnings", "wave",
    "weakref", "webbrowser", "xml.dom.minidom", "xml.etree.ElementTree", "zipfile", "zipimport",
)  # fmt: skip
TOPICS = "pydoc_data.topics"
#: Fewest words a summary (query) and a passage must have to be a usable pair.
MIN_QUERY_WORDS = 4
MIN_PASSAGE_WORDS = 15
#: Longest passage kept, in words (longer ones are cut: the model truncates anyway).
MAX_PASSAGE_WORDS = 180
#: At most this many pairs from one module, so a few large APIs do not make up the task.
MAX_PER_MODULE = 40
#: Negatives ranked with each query (half from its module when it has enough).
NEGATIVES = 29
#: Share of modules held out for the test split.
TEST_SHARE = 0.25
#: Share of modules held out for the validation split (beside the test split's).
VALIDATION_SHARE = 0.15


@dataclass(frozen=True)
class Pair:
    """One documented object: where it comes from, its query and its relevant passage."""

    module: str
    name: str
    query: str
    passage: str


@dataclass(frozen=True)
class Query:
    """A query with its candidates; `relevant` indexes the one relevant candidate."""

    text: str
    candidates: tuple[str, ...]
    relevant: int


def _words(text: str, limit: int | None = None) -> str:
    words = text.split()
    return " ".join(words[:limit] if limit else words)


def split_doc(doc: str) -> tuple[str, str] | None:
    """(summary, rest) of a docstring, whitespace-normalised; None when either is too short."""
    head, _, rest = doc.strip().partition("\n\n")
    query, passage = _words(head), _words(rest, MAX_PASSAGE_WORDS)
    if len(query.split()) < MIN_QUERY_WORDS or len(passage.split()) < MIN_PASSAGE_WORDS:
        return None
    return query, passage


def _documented(module: object, name: str) -> Iterator[tuple[str, str]]:
    """(qualified name, docstring) of the public classes, functions and methods `module` defines."""
    for attr, obj in sorted(vars(module).items()):
        home = getattr(obj, "__module__", None) or ""
        # Packages (asyncio, unittest, ...) re-export what their submodules define.
        if attr.startswith("_") or not (home == name or home.startswith(name + ".")):
            continue
        if inspect.isfunction(obj) and obj.__doc__:
            yield attr, obj.__doc__
        elif inspect.isclass(obj):
            if obj.__doc__:
                yield attr, obj.__doc__
            for meth, fn in sorted(vars(obj).items()):
                if not meth.startswith("_") and inspect.isfunction(fn) and fn.__doc__:
                    yield f"{attr}.{meth}", fn.__doc__


def module_pairs(name: str) -> list[Pair]:
    """The usable pairs of one module (empty if it does not import here)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            module = importlib.import_module(name)
    except ImportError:
        return []
    pairs, seen = [], set()
    for qualname, doc in _documented(module, name):
        parts = split_doc(inspect.cleandoc(doc))
        if parts is None or parts[1] in seen:
            continue
        seen.add(parts[1])
        pairs.append(Pair(name, qualname, *parts))
    return pairs[:MAX_PER_MODULE]


def topic_pairs() -> list[Pair]:
    """The language reference's help topics: title line as query, the text as passage."""
    from pydoc_data.topics import topics

    pairs = []
    for key in sorted(topics):
        title, _, body = topics[key].strip().partition("\n")
        body = body.lstrip("*\n")
        title = title.replace('"', "")
        passage = _words(body, MAX_PASSAGE_WORDS)
        if len(title.split()) >= 2 and len(passage.split()) >= MIN_PASSAGE_WORDS:
            pairs.append(Pair(TOPICS, key, _words(title), passage))
    return pairs


def all_pairs(modules: Sequence[str] = MODULES) -> list[Pair]:
    """Every usable pair of `modules` plus the help topics, in a fixed order."""
    pairs = [p for name in modules for p in module_pairs(name)]
    return pairs + topic_pairs()


def _position(module: str) -> float:
    """A module's stable place in [0, 1) (a hash, so the split does not depend on order)."""
    digest = hashlib.sha256(module.encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(module: str) -> str:
    """ "test" (the first TEST_SHARE of modules), "validation" (the next VALIDATION_SHARE) or
    "train"."""
    at = _position(module)
    if at < TEST_SHARE:
        return "test"
    return "validation" if at < TEST_SHARE + VALIDATION_SHARE else "train"


def split(pairs: Sequence[Pair]) -> tuple[list[Pair], list[Pair], list[Pair]]:
    """(train, validation, test) by module."""
    parts: dict[str, list[Pair]] = {"train": [], "validation": [], "test": []}
    for p in pairs:
        parts[split_of(p.module)].append(p)
    return parts["train"], parts["validation"], parts["test"]


def ranking_queries(
    pairs: Sequence[Pair], seed: int, negatives: int = NEGATIVES, limit: int | None = None
) -> list[Query]:
    """Each pair's query against its passage and `negatives` others of the same split.

    Half the negatives come from the query's own module (as many as it has), the rest from the
    whole split; the relevant passage sits at a random position. `limit` keeps the first queries
    of a seeded shuffle (default: all).
    """
    rng = random.Random(seed)
    by_module: dict[str, list[int]] = {}
    for i, p in enumerate(pairs):
        by_module.setdefault(p.module, []).append(i)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    queries = []
    for i in order[:limit]:
        same = [j for j in by_module[pairs[i].module] if j != i]
        hard = rng.sample(same, min(len(same), negatives // 2))
        rest = [j for j in range(len(pairs)) if j != i and j not in set(hard)]
        chosen = hard + rng.sample(rest, min(len(rest), negatives - len(hard)))
        docs = [pairs[j].passage for j in chosen]
        at = rng.randrange(len(docs) + 1)
        docs.insert(at, pairs[i].passage)
        queries.append(Query(pairs[i].query, tuple(docs), at))
    return queries
