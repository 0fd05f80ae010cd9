package textgame

import "github.com/skillfleet/skillfleet/pkg/bench"

// Items is what `skillfleet data check` reports of a text-game item: the
// loader itself refuses one without its game.
var Items = bench.ItemCheck{Fields: "game (non-empty)"}
