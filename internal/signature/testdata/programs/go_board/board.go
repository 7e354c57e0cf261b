package board

type Board [3][3]rune

func (b *Board) Column(c int) []rune {
	col := make([]rune, 0, 3)
	for r := 0; r <= len(b); r++ {
		col = append(col, b[r][c])
	}
	return col
}
