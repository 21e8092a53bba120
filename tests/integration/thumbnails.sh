#!/usr/bin/env bash
# A file manager shows the data: Debian's pcmanfm, with its default
# settings, opens a mounted array folder on a virtual X display (Xvfb);
# a screenshot (ImageMagick `import`) must hold the colours of the
# array's preview.png over a thumbnail-sized region, and a folder
# without pictures must not (generic icons). Waits are bounded; on
# failure the counts and the screenshot's path are printed.
source "$(dirname "$0")/lib/common.sh"

for tool in Xvfb pcmanfm import convert; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "SKIP: $tool is missing (scripts/install-deps.sh installs it)"
    exit 77
  }
done

mount_tilefs "$CORPUS" "$WORK/mnt" -o ro
arr=$WORK/mnt/dense_2d_rowmajor

# The preview's pixels, as the file manager reads them.
size=$(identify -format '%w %h' "$arr/preview.png") || fail "identify preview.png"
read -r pw ph <<<"$size"
convert "$arr/preview.png" -depth 8 "rgba:$WORK/preview.rgba" || fail "convert preview.png"

# A fresh user: default settings, an empty thumbnail cache.
export HOME=$WORK/home XDG_CONFIG_HOME=$WORK/home/.config \
  XDG_CACHE_HOME=$WORK/home/.cache XDG_DATA_HOME=$WORK/home/.local/share \
  XDG_RUNTIME_DIR=$WORK/run
mkdir -p "$HOME" "$XDG_RUNTIME_DIR"
chmod 700 "$XDG_RUNTIME_DIR"
unset DBUS_SESSION_BUS_ADDRESS

# Xvfb picks a free display and writes its number to fd 3.
Xvfb -displayfd 3 -screen 0 800x600x24 -nolisten tcp \
  3>"$WORK/display" >"$WORK/xvfb.log" 2>&1 &
xvfb=$!
PIDS+=("$xvfb")
for _ in $(seq 1 100); do
  [ -s "$WORK/display" ] && break
  kill -0 "$xvfb" 2>/dev/null || { cat "$WORK/xvfb.log" >&2; fail "Xvfb exited"; }
  sleep 0.1
done
[ -s "$WORK/display" ] || fail "Xvfb did not start within 10 s"
export DISPLAY=":$(head -n 1 "$WORK/display")"

# Kept past a failure (the work folder is not), for a look at the screens.
shots=$(mktemp -d --suffix=.tilefs-thumbnails)
# show FOLDER NAME TRIES: pcmanfm on FOLDER; a screenshot every half
# second until the preview's colours show (at most TRIES); the last is
# $shots/NAME.png, check's output the last line of $WORK/NAME.out.
# 0: they showed.
show() {
  local folder=$1 name=$2 tries=$3 pid rc=1 sw sh
  pcmanfm --no-desktop "$folder" >"$WORK/$name.pcmanfm.log" 2>&1 &
  pid=$!
  PIDS+=("$pid")
  for _ in $(seq 1 "$tries"); do
    sleep 0.5
    kill -0 "$pid" 2>/dev/null || break
    import -window root "$shots/$name.png" 2>>"$WORK/$name.import.log" || continue
    read -r sw sh <<<"$(identify -format '%w %h' "$shots/$name.png")"
    convert "$shots/$name.png" -depth 8 "rgb:$WORK/shot.rgb"
    if "$PY" "$HERE/check_thumbnail.py" "$WORK/preview.rgba" "$pw" "$ph" \
      "$WORK/shot.rgb" "$sw" "$sh" >>"$WORK/$name.out"; then
      rc=0
      break
    fi
  done
  kill "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  return $rc
}

if ! show "$arr" array 60; then
  echo "pcmanfm's log:" >&2
  tail -n 20 "$WORK/array.pcmanfm.log" >&2
  fail "no thumbnail of preview.png in $shots/array.png: $(tail -n 1 "$WORK/array.out" 2>/dev/null)"
fi
echo "array folder: $(tail -n 1 "$WORK/array.out")"
# The control: the string field's folder has no picture, only icons.
if show "$arr/s" control 8; then
  fail "the preview's colours in a folder without pictures ($shots/control.png): $(tail -n 1 "$WORK/control.out")"
fi
echo "folder without pictures: $(tail -n 1 "$WORK/control.out")"
kill "$xvfb" 2>/dev/null || true
wait "$xvfb" 2>/dev/null || true
rm -rf "$shots"
pass
