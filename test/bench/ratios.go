package main

import "fmt"

// printRatios prints one row per mode: its mean ± standard error (value
// formats one number) and its ratio to the first mode, paired by round.
func printRatios(column, value string, order []string, perMode map[string][]float64) {
	fmt.Println("| mode | " + column + " | vs " + order[0] + ", ratio paired by round |")
	fmt.Println("|---|---|---|")
	for _, m := range order {
		mean, se := meanSE(perMode[m])
		var ratio []float64
		for i, v := range perMode[m] {
			ratio = append(ratio, v/perMode[order[0]][i])
		}
		rm, rse := meanSE(ratio)
		fmt.Printf("| %s | "+value+" ± "+value+" | %.3f ± %.3f |\n", m, mean, se, rm, rse)
	}
	fmt.Println()
}
