# SPDX-License-Identifier: GPL-2.0
"""A tiny raster canvas that writes PNG, for the bench chart.

Standard library only (zlib, struct), so `make bench` needs no plotting
package. Text uses a built-in 5x7 bitmap font (ASCII letters, digits and
the punctuation the chart needs), drawn at an integer scale.
"""
import math
import struct
import zlib

# 5x7 glyphs: seven rows of five bits, most significant bit leftmost.
_FONT = {
    ' ': '00 00 00 00 00 00 00', '0': '0E 11 13 15 19 11 0E',
    '1': '04 0C 04 04 04 04 0E', '2': '0E 11 01 02 04 08 1F',
    '3': '1F 02 04 02 01 11 0E', '4': '02 06 0A 12 1F 02 02',
    '5': '1F 10 1E 01 01 11 0E', '6': '06 08 10 1E 11 11 0E',
    '7': '1F 01 02 04 08 08 08', '8': '0E 11 11 0E 11 11 0E',
    '9': '0E 11 11 0F 01 02 0C', 'A': '0E 11 11 11 1F 11 11',
    'B': '1E 11 11 1E 11 11 1E', 'C': '0E 11 10 10 10 11 0E',
    'D': '1C 12 11 11 11 12 1C', 'E': '1F 10 10 1E 10 10 1F',
    'F': '1F 10 10 1E 10 10 10', 'G': '0E 11 10 17 11 11 0F',
    'H': '11 11 11 1F 11 11 11', 'I': '0E 04 04 04 04 04 0E',
    'J': '07 02 02 02 02 12 0C', 'K': '11 12 14 18 14 12 11',
    'L': '10 10 10 10 10 10 1F', 'M': '11 1B 15 15 11 11 11',
    'N': '11 11 19 15 13 11 11', 'O': '0E 11 11 11 11 11 0E',
    'P': '1E 11 11 1E 10 10 10', 'Q': '0E 11 11 11 15 12 0D',
    'R': '1E 11 11 1E 14 12 11', 'S': '0F 10 10 0E 01 01 1E',
    'T': '1F 04 04 04 04 04 04', 'U': '11 11 11 11 11 11 0E',
    'V': '11 11 11 11 11 0A 04', 'W': '11 11 11 15 15 15 0A',
    'X': '11 11 0A 04 0A 11 11', 'Y': '11 11 11 0A 04 04 04',
    'Z': '1F 01 02 04 08 10 1F', 'a': '00 00 0E 01 0F 11 0F',
    'b': '10 10 16 19 11 11 1E', 'c': '00 00 0E 10 10 11 0E',
    'd': '01 01 0D 13 11 11 0F', 'e': '00 00 0E 11 1F 10 0E',
    'f': '06 09 08 1C 08 08 08', 'g': '00 00 0F 11 0F 01 0E',
    'h': '10 10 16 19 11 11 11', 'i': '04 00 0C 04 04 04 0E',
    'j': '02 00 06 02 02 12 0C', 'k': '10 10 12 14 18 14 12',
    'l': '0C 04 04 04 04 04 0E', 'm': '00 00 1A 15 15 11 11',
    'n': '00 00 16 19 11 11 11', 'o': '00 00 0E 11 11 11 0E',
    'p': '00 00 1E 11 1E 10 10', 'q': '00 00 0D 13 0F 01 01',
    'r': '00 00 16 19 10 10 10', 's': '00 00 0E 10 0E 01 1E',
    't': '08 08 1C 08 08 09 06', 'u': '00 00 11 11 11 13 0D',
    'v': '00 00 11 11 11 0A 04', 'w': '00 00 11 11 15 15 0A',
    'x': '00 00 11 0A 04 0A 11', 'y': '00 00 11 11 0F 01 0E',
    'z': '00 00 1F 02 04 08 1F', '.': '00 00 00 00 00 0C 0C',
    ',': '00 00 00 00 0C 04 08', ':': '00 0C 0C 00 0C 0C 00',
    '-': '00 00 00 1F 00 00 00', '_': '00 00 00 00 00 00 1F',
    '/': '00 01 02 04 08 10 00', '(': '02 04 08 08 08 04 02',
    ')': '08 04 02 02 02 04 08', '%': '18 19 02 04 08 13 03',
    '=': '00 00 1F 00 1F 00 00', '+': '00 04 04 1F 04 04 00',
    '[': '0E 08 08 08 08 08 0E', ']': '0E 02 02 02 02 02 0E',
    '<': '02 04 08 10 08 04 02', '>': '08 04 02 01 02 04 08',
    '*': '00 04 15 0E 15 04 00', '#': '0A 0A 1F 0A 1F 0A 0A',
    '?': '0E 11 01 02 04 00 04', "'": '0C 04 08 00 00 00 00',
    '|': '04 04 04 04 04 04 04', '!': '04 04 04 04 00 00 04',
    '"': '0A 0A 0A 00 00 00 00', ';': '00 0C 0C 00 0C 04 08',
    '~': '00 00 08 15 02 00 00', '^': '04 0A 11 00 00 00 00',
}
FONT = {c: [int(r, 16) for r in g.split()] for c, g in _FONT.items()}


class Canvas:
    def __init__(self, w, h, bg=(255, 255, 255)):
        self.w, self.h = w, h
        self.px = bytearray(bytes(bg) * (w * h))

    def rect(self, x0, y0, x1, y1, color):
        """Fill [x0, x1) x [y0, y1), clipped."""
        x0, x1 = max(0, int(x0)), min(self.w, int(x1))
        y0, y1 = max(0, int(y0)), min(self.h, int(y1))
        if x0 >= x1:
            return
        row = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            o = (y * self.w + x0) * 3
            self.px[o:o + len(row)] = row

    def hline(self, x0, x1, y, color, t=1):
        self.rect(min(x0, x1), y, max(x0, x1) + 1, y + t, color)

    def vline(self, x, y0, y1, color, t=1):
        self.rect(x, min(y0, y1), x + t, max(y0, y1) + 1, color)

    def frame(self, x0, y0, x1, y1, color, t=1):
        self.hline(x0, x1, y0, color, t)
        self.hline(x0, x1, y1, color, t)
        self.vline(x0, y0, y1, color, t)
        self.vline(x1, y0, y1, color, t)

    def dashed_hline(self, x0, x1, y, color, dash=4):
        for x in range(int(x0), int(x1), 2 * dash):
            self.hline(x, min(x + dash, x1), y, color)

    @staticmethod
    def text_width(s, scale=2):
        return len(s) * 6 * scale - scale if s else 0

    def text(self, x, y, s, color=(0, 0, 0), scale=2, align='left'):
        """Draw s with its top at y; align is left, center or right of x."""
        w = self.text_width(s, scale)
        if align == 'center':
            x -= w // 2
        elif align == 'right':
            x -= w
        for ch in s:
            g = FONT.get(ch, FONT['?'])
            for r, bits in enumerate(g):
                for c in range(5):
                    if bits & (0x10 >> c):
                        self.rect(x + c * scale, y + r * scale,
                                  x + (c + 1) * scale, y + (r + 1) * scale, color)
            x += 6 * scale
        return w

    def png(self):
        raw = bytearray()
        stride = self.w * 3
        for y in range(self.h):
            raw.append(0)
            raw += self.px[y * stride:(y + 1) * stride]

        def chunk(kind, data):
            c = struct.pack('>I', len(data)) + kind + data
            return c + struct.pack('>I', zlib.crc32(kind + data) & 0xffffffff)

        return (b'\x89PNG\r\n\x1a\n'
                + chunk(b'IHDR', struct.pack('>IIBBBBB', self.w, self.h, 8, 2, 0, 0, 0))
                + chunk(b'IDAT', zlib.compress(bytes(raw), 9))
                + chunk(b'IEND', b''))

    def save(self, path):
        with open(path, 'wb') as f:
            f.write(self.png())


def nice_ticks(vmax, n=5):
    """Tick step and top (a 1/2/5 x 10^k step, about n ticks)."""
    if vmax <= 0:
        return 1.0, 1.0
    raw = vmax / n
    mag = 10 ** len(str(int(raw))) / 10 if raw >= 1 else 10 ** -len(str(int(1 / raw)))
    for m in (1, 2, 2.5, 5, 10):
        step = m * mag
        if step >= raw:
            break
    top = step * (int(vmax / step) + (0 if vmax % step == 0 else 1))
    return step, top


def fmt_tick(v):
    if v == int(v):
        return str(int(v))
    return ('%.3f' % v).rstrip('0').rstrip('.')


def bar_panel(cv, x, y, w, h, title, groups, series, colors, vmax=None, marks=None, log=False,
              label_scale=2):
    """A grouped bar chart with min-max whiskers.

    groups: x labels ('\\n' splits lines); series: one list per series of
    (median, lo, hi), or a string drawn instead of a bar (e.g. "FAIL"), or
    None. marks: optional list per series of values drawn as a black dash
    across the bar (e.g. the 99th percentile). log: logarithmic y axis.
    """
    cv.text(x + w // 2, y, title, scale=2, align='center')
    top = y + 30
    left, bottom = x + 74, y + h - 16 - 18 * label_scale
    right = x + w - 10
    vals = [v for s in series for v in s if isinstance(v, tuple)]
    allv = [v[2] for v in vals] + [v[0] for v in vals]
    if marks:
        allv += [m for s in marks for m in s if isinstance(m, (int, float))]
    ph = bottom - top
    if log:
        pos = [v for v in allv + [v[1] for v in vals] if v > 0]
        lo_e = math.floor(math.log10(min(pos))) if pos else 0
        hi_e = math.ceil(math.log10(max(pos) * 1.01)) if pos else 1
        if hi_e <= lo_e:
            hi_e = lo_e + 1

        def ypos(v):
            if v <= 0:
                return bottom
            f = (math.log10(v) - lo_e) / (hi_e - lo_e)
            return bottom - ph * min(max(f, 0), 1)
        ticks = [10.0 ** e for e in range(lo_e, hi_e + 1)]
        base = 10.0 ** lo_e
    else:
        if vmax is None:
            vmax = max(allv + [0])
        step, ytop = nice_ticks(vmax * 1.05 if vmax else 1)

        def ypos(v):
            return bottom - ph * min(v, ytop) / ytop
        ticks, t = [], 0.0
        while t <= ytop + 1e-9:
            ticks.append(t)
            t += step
        base = 0.0
    for t in ticks:
        yy = int(ypos(t))
        cv.hline(left, right, yy, (225, 225, 225))
        cv.text(left - 6, yy - 7, fmt_tick(t), scale=2, align='right', color=(60, 60, 60))
    cv.vline(left, top, bottom, (0, 0, 0))
    cv.hline(left, right, bottom, (0, 0, 0))
    ng, ns = len(groups), len(series)
    gw = (right - left) / max(ng, 1)
    bw = min(44, gw * 0.8 / max(ns, 1))
    for gi, g in enumerate(groups):
        gx = left + gi * gw + (gw - bw * ns) / 2
        for si in range(ns):
            v = series[si][gi]
            bx0, bx1 = int(gx + si * bw), int(gx + (si + 1) * bw) - 2
            cx = (bx0 + bx1) // 2
            if isinstance(v, tuple):
                med, lo, hi = v
                cv.rect(bx0, ypos(max(med, base)), bx1, bottom, colors[si])
                if hi > lo:
                    cv.vline(cx, int(ypos(hi)), int(ypos(lo)), (0, 0, 0))
                    cv.hline(cx - 3, cx + 3, int(ypos(hi)), (0, 0, 0))
                    cv.hline(cx - 3, cx + 3, int(ypos(lo)), (0, 0, 0))
            elif isinstance(v, str):
                for k, ch in enumerate(v[:4]):
                    cv.text(cx, bottom - 6 - (len(v[:4]) - k) * 16, ch, scale=2,
                            align='center', color=(200, 0, 0))
            if marks and isinstance(marks[si][gi], (int, float)):
                my = int(ypos(marks[si][gi]))
                cv.rect(bx0 - 2, my - 1, bx1 + 2, my + 2, (0, 0, 0))
        for li, part in enumerate(g.split('\n')):
            cv.text(int(left + gi * gw + gw / 2), bottom + 6 + li * 9 * label_scale, part,
                    scale=label_scale, align='center', color=(40, 40, 40))
