package synth

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
)

// A page is text drawn with a fixed 5x7 bitmap font on a white PNG, on a
// grid: cell CellW x CellH pixels at scale Scale, from a Margin-pixel
// margin. The simulated model reads it back from the image alone
// ([ReadPage]), as a vision model would read a scan.
const (
	Scale  = 2
	CellW  = 6 * Scale
	CellH  = 10 * Scale
	Margin = 8 * Scale
)

// glyphs are the font's characters: 7 rows of 5 columns, '#' inked.
var glyphs = map[rune][7]string{
	'A': {".###.", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"},
	'B': {"####.", "#...#", "#...#", "####.", "#...#", "#...#", "####."},
	'C': {".###.", "#...#", "#....", "#....", "#....", "#...#", ".###."},
	'D': {"####.", "#...#", "#...#", "#...#", "#...#", "#...#", "####."},
	'E': {"#####", "#....", "#....", "####.", "#....", "#....", "#####"},
	'F': {"#####", "#....", "#....", "####.", "#....", "#....", "#...."},
	'G': {".###.", "#...#", "#....", "#.###", "#...#", "#...#", ".####"},
	'H': {"#...#", "#...#", "#...#", "#####", "#...#", "#...#", "#...#"},
	'I': {".###.", "..#..", "..#..", "..#..", "..#..", "..#..", ".###."},
	'J': {"..###", "...#.", "...#.", "...#.", "...#.", "#..#.", ".##.."},
	'K': {"#...#", "#..#.", "#.#..", "##...", "#.#..", "#..#.", "#...#"},
	'L': {"#....", "#....", "#....", "#....", "#....", "#....", "#####"},
	'M': {"#...#", "##.##", "#.#.#", "#.#.#", "#...#", "#...#", "#...#"},
	'N': {"#...#", "#...#", "##..#", "#.#.#", "#..##", "#...#", "#...#"},
	'O': {".###.", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."},
	'P': {"####.", "#...#", "#...#", "####.", "#....", "#....", "#...."},
	'Q': {".###.", "#...#", "#...#", "#...#", "#.#.#", "#..#.", ".##.#"},
	'R': {"####.", "#...#", "#...#", "####.", "#.#..", "#..#.", "#...#"},
	'S': {".####", "#....", "#....", ".###.", "....#", "....#", "####."},
	'T': {"#####", "..#..", "..#..", "..#..", "..#..", "..#..", "..#.."},
	'U': {"#...#", "#...#", "#...#", "#...#", "#...#", "#...#", ".###."},
	'V': {"#...#", "#...#", "#...#", "#...#", "#...#", ".#.#.", "..#.."},
	'W': {"#...#", "#...#", "#...#", "#.#.#", "#.#.#", "#.#.#", ".#.#."},
	'X': {"#...#", "#...#", ".#.#.", "..#..", ".#.#.", "#...#", "#...#"},
	'Y': {"#...#", "#...#", ".#.#.", "..#..", "..#..", "..#..", "..#.."},
	'Z': {"#####", "....#", "...#.", "..#..", ".#...", "#....", "#####"},
	'0': {".###.", "#...#", "#..##", "#.#.#", "##..#", "#...#", ".###."},
	'1': {"..#..", ".##..", "..#..", "..#..", "..#..", "..#..", ".###."},
	'2': {".###.", "#...#", "....#", "...#.", "..#..", ".#...", "#####"},
	'3': {"#####", "...#.", "..#..", "...#.", "....#", "#...#", ".###."},
	'4': {"...#.", "..##.", ".#.#.", "#..#.", "#####", "...#.", "...#."},
	'5': {"#####", "#....", "####.", "....#", "....#", "#...#", ".###."},
	'6': {"..##.", ".#...", "#....", "####.", "#...#", "#...#", ".###."},
	'7': {"#####", "....#", "...#.", "..#..", ".#...", ".#...", ".#..."},
	'8': {".###.", "#...#", "#...#", ".###.", "#...#", "#...#", ".###."},
	'9': {".###.", "#...#", "#...#", ".####", "....#", "...#.", ".##.."},
	':': {".....", "..#..", "..#..", ".....", "..#..", "..#..", "....."},
	'.': {".....", ".....", ".....", ".....", ".....", ".##..", ".##.."},
	',': {".....", ".....", ".....", ".....", ".##..", "..#..", ".#..."},
	'-': {".....", ".....", ".....", "#####", ".....", ".....", "....."},
	'/': {".....", "....#", "...#.", "..#..", ".#...", "#....", "....."},
	'#': {".#.#.", ".#.#.", "#####", ".#.#.", "#####", ".#.#.", ".#.#."},
	'(': {"...#.", "..#..", ".#...", ".#...", ".#...", "..#..", "...#."},
	')': {".#...", "..#..", "...#.", "...#.", "...#.", "..#..", ".#..."},
}

// RenderPage draws lines of text (upper-cased; characters the font lacks
// become '?'-free blanks) on a white page and returns the PNG.
func RenderPage(lines []string) ([]byte, error) {
	cols := 0
	for _, l := range lines {
		cols = max(cols, len([]rune(l)))
	}
	w, h := 2*Margin+cols*CellW, 2*Margin+len(lines)*CellH
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 0xff
	}
	for row, l := range lines {
		for col, c := range []rune(strings.ToUpper(l)) {
			g, ok := glyphs[c]
			if !ok {
				continue
			}
			x0, y0 := Margin+col*CellW, Margin+row*CellH
			for gy, bits := range g {
				for gx, b := range bits {
					if b != '#' {
						continue
					}
					for dy := range Scale {
						for dx := range Scale {
							img.SetGray(x0+gx*Scale+dx, y0+gy*Scale+dy, color.Gray{Y: 0x10})
						}
					}
				}
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// ReadPage reads the text of a page drawn by [RenderPage] from its PNG:
// each grid cell's pixels are matched against the font. A cell that
// matches no glyph reads as '?'; trailing blanks are trimmed.
func ReadPage(data []byte) ([]string, error) {
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("read page: %w", err)
	}
	b := img.Bounds()
	gray, _ := img.(*image.Gray)
	inked := func(x, y int) bool {
		if !(image.Point{x, y}.In(b)) {
			return false
		}
		if gray != nil {
			return gray.Pix[gray.PixOffset(x, y)] < 0x80
		}
		g := color.GrayModel.Convert(img.At(x, y)).(color.Gray)
		return g.Y < 0x80
	}
	index := map[string]rune{}
	for c, g := range glyphs {
		index[strings.Join(g[:], "")] = c
	}
	rows, cols := (b.Dy()-2*Margin)/CellH, (b.Dx()-2*Margin)/CellW
	var lines []string
	for row := range rows {
		var sb strings.Builder
		for col := range cols {
			x0, y0 := b.Min.X+Margin+col*CellW, b.Min.Y+Margin+row*CellH
			var key strings.Builder
			blank := true
			for gy := range 7 {
				for gx := range 5 {
					if inked(x0+gx*Scale, y0+gy*Scale) {
						key.WriteByte('#')
						blank = false
					} else {
						key.WriteByte('.')
					}
				}
			}
			switch c, ok := index[key.String()]; {
			case blank:
				sb.WriteByte(' ')
			case ok:
				sb.WriteRune(c)
			default:
				sb.WriteByte('?')
			}
		}
		lines = append(lines, strings.TrimRight(sb.String(), " "))
	}
	return lines, nil
}
