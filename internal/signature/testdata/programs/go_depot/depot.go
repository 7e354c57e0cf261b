package depot

type Depot struct{ Stock map[string]int }

func (d *Depot) Fill(item string) {
	d.Stock[item] = restockLevel(item)
}
