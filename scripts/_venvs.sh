# Shared by scripts/run-samples and scripts/test: create the two virtual environments once.
# Theano 1.0.5 needs numpy < 1.24 and PyTensor needs numpy 2, so each backend has its own.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${SCANPROBE_PYTHON:-python3}"
THEANO_VENV="$ROOT/.venv-theano"
PYTENSOR_VENV="$ROOT/.venv-pytensor"
export THEANO_FLAGS="${THEANO_FLAGS:-base_compiledir=$ROOT/.cache/theano}"
export NUMBA_CACHE_DIR="${NUMBA_CACHE_DIR:-$ROOT/.cache/numba}"

_make_venv() {  # dir, extras, module
  local dir="$1" extra="$2" module="$3"
  if [ ! -x "$dir/bin/scanprobe" ] || [ ! -f "$dir/.scanprobe-ready" ] || [ "$ROOT/pyproject.toml" -nt "$dir/.scanprobe-ready" ]; then
    echo "setting up $(basename "$dir") (once)..." >&2
    "$PY" -m venv "$dir"
    "$dir/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT[$extra,test]" 2>&1 \
      | grep -v "^WARNING: Location" >&2 || true
    "$dir/bin/python" -c "import importlib.util as u, scanprobe; assert u.find_spec('$module')" \
      || { echo "could not install $module in $dir" >&2; exit 2; }
    touch "$dir/.scanprobe-ready"
  fi
}

_ensure_graphviz() {  # `scanprobe graph` draws svg/png with graphviz's dot (a Debian package)
  command -v dot >/dev/null 2>&1 && return 0
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing graphviz (once)..." >&2
    apt-get install -y -q graphviz >/dev/null 2>&1 || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q graphviz >/dev/null 2>&1; } || true
  fi
  command -v dot >/dev/null 2>&1 || echo "note: graphviz is missing (apt-get install graphviz); svg/png pictures will fail" >&2
}

ensure_venvs() {
  _ensure_graphviz
  _make_venv "$THEANO_VENV" theano theano
  _make_venv "$PYTENSOR_VENV" pytensor,jax pytensor
}
