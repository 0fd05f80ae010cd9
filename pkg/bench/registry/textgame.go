package registry

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver/textgame"
)

func init() {
	register("textgame", entry{items: textgame.Items, notes: envserver.Notes, idFields: []string{"id"}, normalize: textgame.NormalizeItem,
		newEnv: configured("textgame", func(c envserver.Config) (bench.Env, error) { return envserver.New("textgame", c, envserver.Notes) })})
}
