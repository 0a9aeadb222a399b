# Shared by scripts/run-samples, scripts/test and scripts/check-samples: one virtual environment
# per backend version ("leg"), created once. Backends cannot share an environment (Theano 1.0.5
# and Aesara need numpy < 2, PyTensor needs numpy 2), and PyTensor 3.1+ needs Python >= 3.12.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# scanprobe's own runs of the samples keep Theano's compile cache under the clone; the tests keep
# theirs in a folder of their own that outlives the clone (tests/compile_cache.py), so scripts/test
# gives them the flags you set (USER_THEANO_FLAGS), not this default
USER_THEANO_FLAGS="${THEANO_FLAGS:-}"
export THEANO_FLAGS="${THEANO_FLAGS:-base_compiledir=$ROOT/.cache/theano}"
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$ROOT/.cache/numba}"
export PIP_DISABLE_PIP_VERSION_CHECK=1
# Theano keys some C modules by Python's string hash: a fixed seed lets every test process reuse them
# (scanprobe's own children get the same seed: runners/supervise.py)
export PYTHONHASHSEED="${PYTHONHASHSEED:-0}"

# name            python  backend   project extras (test is added)  other requirements
LEGS_TABLE="
theano            3.11    theano    theano          -
pytensor-2.38     3.11    pytensor  pytensor,jax    pytensor==2.38.* pymc==5.28.*
pytensor-3.0      3.11    pytensor  pytensor,jax    pytensor==3.0.*
pytensor-3.3      3.12    pytensor  pytensor,jax    pytensor>=3.3,<3.4 pymc>=6
pytensor-3.3-py313 3.13   pytensor  pytensor,jax    pytensor>=3.3,<3.4
aesara            3.11    aesara    aesara          -
"
ALL_LEGS="$(echo "$LEGS_TABLE" | awk 'NF {print $1}' | tr '\n' ' ')"

leg_field() {  # leg, field number (2 python, 3 backend, 4 extras, 5 other requirements)
  echo "$LEGS_TABLE" | awk -v leg="$1" -v f="$2" '$1 == leg {
    if (f == 5) { for (i = 5; i <= NF; i++) if ($i != "-") printf "%s ", $i } else print $f }'
}

find_python() {  # version -> an interpreter of that version, or nothing
  local v="$1" cand
  for cand in "python$v" "$(command -v pyenv >/dev/null 2>&1 && pyenv root)/versions/$v"*/bin/"python$v" /usr/bin/"python$v" /usr/local/bin/"python$v"; do
    [ -n "$cand" ] || continue
    if "$cand" -c "import sys, venv; assert sys.version_info[:2] == tuple(map(int, '$v'.split('.')))" >/dev/null 2>&1; then
      command -v "$cand" 2>/dev/null || echo "$cand"
      return 0
    fi
  done
  return 1
}

_ensure_graphviz() {  # `scanprobe graph` draws svg/png with graphviz's dot (a Debian package)
  command -v dot >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing graphviz (once)..." >&2
    apt-get install -y -q graphviz >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q graphviz >/dev/null 2>&1; } || true
  fi
  command -v dot >/dev/null 2>&1 || echo "note: graphviz is missing (apt-get install graphviz); svg/png pictures will fail" >&2
}

SKIPPED_LEGS=""

ensure_leg() {  # leg -> creates $ROOT/.venv-<leg> once; returns 1 (and says why) when it cannot
  local leg="$1" dir="$ROOT/.venv-$1" py backend reqs stamp
  py="$(leg_field "$leg" 2)"; backend="$(leg_field "$leg" 3)"
  reqs="-e .[test,$(leg_field "$leg" 4)] $(leg_field "$leg" 5)"
  [ -n "$backend" ] || { echo "unknown leg $leg (legs: $ALL_LEGS)" >&2; return 1; }
  stamp="$dir/.scanprobe-ready"
  if [ -x "$dir/bin/python" ] && [ -f "$stamp" ] && [ ! "$ROOT/pyproject.toml" -nt "$stamp" ] \
     && [ "$(cat "$stamp")" = "$reqs" ]; then
    return 0
  fi
  local python
  if ! python="$(find_python "$py")"; then
    echo "skipping leg $leg: no Python $py on this machine (install it, e.g. pyenv install $py)" >&2
    SKIPPED_LEGS="$SKIPPED_LEGS $leg(no Python $py)"
    return 1
  fi
  echo "setting up .venv-$leg with $python (once)..." >&2
  rm -rf "$dir"
  "$python" -m venv "$dir"
  # shellcheck disable=SC2086
  (cd "$ROOT" && "$dir/bin/python" -m pip install -q $reqs 2>&1 | grep -v "^WARNING: Location" >&2) || true
  if ! "$dir/bin/python" -c "import importlib.util as u, scanprobe; assert u.find_spec('$backend')" 2>/dev/null; then
    echo "skipping leg $leg: could not install $backend with Python $py (pip install $reqs failed)" >&2
    SKIPPED_LEGS="$SKIPPED_LEGS $leg(install failed)"
    return 1
  fi
  echo "$reqs" > "$stamp"
}

leg_backend() { leg_field "$1" 3; }

leg_version() {  # what the leg really has, e.g. "pytensor 3.3.8, python 3.12.1"
  local b; b="$(leg_backend "$1")"
  "$ROOT/.venv-$1/bin/python" -c "import importlib.metadata as m, platform; print('$b', m.version('$b') + ', python', platform.python_version())"
}

selected_legs() {  # SCANPROBE_LEGS="theano pytensor-3.0" chooses; default: every leg
  echo "${SCANPROBE_LEGS:-$ALL_LEGS}"
}
