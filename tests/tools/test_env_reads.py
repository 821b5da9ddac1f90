"""The environment-name readers of `tools/sources` on small synthetic packages: what counts as a
read (helpers, closures, getter classes and their subclasses, loops over literal names), what
does not (setters, methods, mere mentions), and what SGLang's `environ.py` declares beyond its
`Envs` names (fallbacks, deprecations, the legacy prefix rewrite)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tools.sources.common import package_reads
from tools.sources.sglang import sglang_environment


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


HELPERS = {
    "pkg/__init__.py": "",
    "pkg/utils.py": """
        import os

        def get_bool_env_var(name, default="false"):
            return os.getenv(name, default).lower() in ("1", "true")

        def _lazy_int(key, default=0):
            def _getter():
                return int(os.environ.get(key, default))
            return _getter

        def _via_helper(flag):
            return get_bool_env_var(flag)

        class _Gated:
            def __init__(self, name, default):
                self._name = name
                self._default = default

            def get(self):
                raw = os.environ.get(self._name)
                return self._default if raw is None else raw

        class _GatedToo(_Gated):
            pass

        class Config:
            def get(self, key):
                return os.environ.get(key)

        def set_env_var(key, value):
            old = os.environ.get(key)
            os.environ[key] = value
            return old
        """,
    # No marker text in this module: it is found because it calls a helper.
    "pkg/model.py": """
        from pkg.utils import _GatedToo, _lazy_int, _via_helper, get_bool_env_var

        FLAG = "PKG_CONSTANT_FLAG"
        A = get_bool_env_var("PKG_DIRECT")
        B = _lazy_int(key="PKG_BY_KEYWORD")
        C = _via_helper(FLAG)
        D = _GatedToo("PKG_GATED", False)
        MENTIONED = "PKG_ONLY_MENTIONED"
        """,
    "pkg/other.py": """
        import os
        from pkg.utils import Config, set_env_var

        config = {"a": 1}
        config.get("not_a_variable")
        Config().get("PKG_VIA_METHOD")
        set_env_var("PKG_SET_ONLY", "1")
        if "PKG_TESTED" in os.environ:
            pass

        NAMES = ("PKG_LOOP_A", "PKG_LOOP_B")
        for name in NAMES:
            os.environ.get(name)
        any(os.getenv(v) for v in ("PKG_COMPREHENSION",))
        for key in os.environ:
            os.environ[key]
        """,
}


def test_a_helper_that_passes_its_parameter_to_a_getter_reads_the_name_it_is_given(
    tmp_path: Path,
) -> None:
    root = _write(tmp_path, HELPERS)
    assert package_reads(root, "pkg") == {
        "PKG_DIRECT",
        "PKG_BY_KEYWORD",
        "PKG_CONSTANT_FLAG",
        "PKG_GATED",
        "PKG_TESTED",
        "PKG_LOOP_A",
        "PKG_LOOP_B",
        "PKG_COMPREHENSION",
    }


ENVIRON = """
    import os
    import warnings


    class EnvField:
        def __init__(self, default):
            self.default = default

        def __set_name__(self, owner, name):
            self.name = name

        def get(self):
            return os.getenv(self.name)


    class EnvBool(EnvField):
        pass


    class _DeprecatedEnvFallback:
        def __init__(self, default, deprecated_name):
            super().__init__(default)
            self.deprecated_name = deprecated_name

        def get(self):
            if os.getenv(self.name) is None:
                fallback = os.getenv(self.deprecated_name)
                if fallback is not None:
                    os.environ[self.name] = fallback
            return super().get()


    class EnvBoolWithAlias(_DeprecatedEnvFallback, EnvBool):
        pass


    class Envs:
        SGLANG_NEW = EnvBoolWithAlias(False, deprecated_name="SGLANG_OLD")
        SGLANG_PLAIN = EnvBool(True)


    class _DeprecatedEnv:
        def __init__(self, replacement=None, note=None):
            self.replacement = replacement
            self.note = note


    _DEPRECATED_ENVS = {
        "SGLANG_RENAMED": _DeprecatedEnv(replacement="SGLANG_PLAIN"),
        "SGLANG_MOVED": _DeprecatedEnv("SGLANG_NEW"),
        "SGLANG_GONE": _DeprecatedEnv(note="Pass --gone " "instead."),
        "SGLANG_SILENT": _DeprecatedEnv(),
    }


    def _handle_deprecated_envs():
        for key, value in list(os.environ.items()):
            if key.startswith("SGL_") and key not in _DEPRECATED_ENVS:
                new_key = key.replace("SGL_", "SGLANG_", 1)
                warnings.warn(f"Environment variable {key} is deprecated, please use {new_key}")
                os.environ[new_key] = value
    """


def test_sglang_environ_declares_fallbacks_deprecations_and_the_prefix_rewrite(
    tmp_path: Path,
) -> None:
    root = _write(tmp_path, {"sglang/__init__.py": "", "sglang/srt/environ.py": ENVIRON})
    environment = sglang_environment(root)
    assert environment.names == {"SGLANG_NEW", "SGLANG_PLAIN", "SGLANG_OLD"}
    assert environment.deprecated == {
        "SGLANG_OLD": "SGLANG_NEW",
        "SGLANG_RENAMED": "SGLANG_PLAIN",
        "SGLANG_MOVED": "SGLANG_NEW",
    }
    assert environment.ignored == {"SGLANG_GONE": "Pass --gone instead.", "SGLANG_SILENT": ""}
    assert environment.prefix_aliases == {"SGL_": "SGLANG_"}
    # The fallback is also found as a read of its own: the constructor keeps the name a
    # method reads, and the subclass without a constructor inherits that.
    assert "SGLANG_OLD" in package_reads(root, "sglang")


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        ('PREFIX + "X": _DeprecatedEnv(),', "_DEPRECATED_ENVS key is computed"),
        ('"SGLANG_SILENT": _DeprecatedEnv(NEW),', "replacement is computed"),
        ('"SGLANG_SILENT": _DeprecatedEnv(note=NOTE),', "note is computed"),
    ],
)
def test_a_deprecation_the_reader_cannot_follow_is_refused(
    tmp_path: Path, entry: str, error: str
) -> None:
    text = ENVIRON.replace('"SGLANG_SILENT": _DeprecatedEnv(),', entry)
    root = _write(tmp_path, {"sglang/srt/environ.py": text})
    with pytest.raises(LookupError, match=error):
        sglang_environment(root)
