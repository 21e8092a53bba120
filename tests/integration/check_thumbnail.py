"""Does a screenshot show a picture's colours? (thumbnails.sh)

check_thumbnail.py PICTURE.rgba WIDTH HEIGHT SHOT.rgb SHOT_W SHOT_H

PICTURE is the preview's RGBA pixels, SHOT a screenshot's RGB pixels
(ImageMagick `convert X -depth 8 rgba:-` / `rgb:-`). Prints how many
screenshot pixels have one of the picture's opaque colours (within 2 per
channel) and the box they fill; exits 0 when they make a thumbnail: at
least 400 of them, spanning at least 24 x 24 pixels, with at least 8 of
the picture's colours among them.
"""
import sys


def main():
    pic_path, pw, ph, shot_path, sw, sh = sys.argv[1:7]
    pw, ph, sw, sh = int(pw), int(ph), int(sw), int(sh)
    pic = open(pic_path, "rb").read()
    shot = open(shot_path, "rb").read()
    assert len(pic) == pw * ph * 4, "picture size"
    assert len(shot) == sw * sh * 3, "screenshot size"
    colours = set()
    for i in range(0, len(pic), 4):
        if pic[i + 3] == 255:
            colours.add((pic[i], pic[i + 1], pic[i + 2]))
    # Near colours too: thumbnails are scaled and may round differently.
    near = {}
    for c in colours:
        for dr in range(-2, 3):
            for dg in range(-2, 3):
                for db in range(-2, 3):
                    near[(c[0] + dr, c[1] + dg, c[2] + db)] = c
    n = 0
    seen = set()
    x0, y0, x1, y1 = sw, sh, -1, -1
    for y in range(sh):
        row = y * sw * 3
        for x in range(sw):
            p = shot[row + 3 * x:row + 3 * x + 3]
            c = near.get((p[0], p[1], p[2]))
            if c is None:
                continue
            n += 1
            seen.add(c)
            x0, y0, x1, y1 = min(x0, x), min(y0, y), max(x1, x), max(y1, y)
    box = (x1 - x0 + 1, y1 - y0 + 1) if n else (0, 0)
    print("%d pixels of %d of the picture's %d colours, box %dx%d at %d,%d"
          % (n, len(seen), len(colours), box[0], box[1], x0, y0))
    ok = n >= 400 and box[0] >= 24 and box[1] >= 24 and len(seen) >= 8
    sys.exit(0 if ok else 1)


main()
