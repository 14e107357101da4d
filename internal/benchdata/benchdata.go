// Package benchdata holds the words of the benchmark's generated publications, shared by make bench's
// generator (internal/bench) and the in-process read benchmarks that reproduce its distribution
// (backend/badgerstore), which cannot import internal/bench without an import cycle.
package benchdata

import "strings"

var (
	Titles = []string{
		"Agua potable para familias del barrio", "Necesitamos carpas y cobijas", "Medicamentos para adultos mayores",
		"Transporte de heridos al hospital", "Alimentos no perecederos", "Refugio temporal para niños",
		"Voluntarios para remover escombros", "Pañales y leche de fórmula", "Linternas y pilas", "Kit de aseo",
	}
	Words = strings.Fields(`agua potable familias niños adultos mayores medicamentos cobijas carpas colchonetas
		escombros vivienda colapsada sin luz desde el sismo necesitamos urgente ayuda vereda barrio casa
		albergue comedor comunitario voluntarios transporte camioneta hospital insulina pañales leche
		fórmula linternas pilas agua embotellada arroz lentejas enlatados aseo jabón toallas higiénicas
		la de en con para por que los las del una un sector calle carrera parque iglesia escuela`)
	Categories = []string{"alimentos", "salud", "refugio", "transporte", "acopio", "rescate", "otro"}
)
