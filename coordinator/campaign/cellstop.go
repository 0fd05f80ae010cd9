package campaign

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
)

// halt remembers a cell that stopped on its own while the campaign went
// on: its run reached its own budget (a cell config's budget.*) or was
// asked to stop (a STOP file in its dir). Such a cell waits for the
// campaign to be run again, as one the campaign's budget stopped does;
// this process neither takes it again (its run would stop at once, and be
// taken again, without end) nor waits for it to finish. A cell stopped
// because the campaign stops, or fenced off a member, is not halted. c.mu
// is held.
func (c *Campaign) halt(ctx context.Context, cell, state string) {
	if state != StateStopped || c.stopped != nil || errors.Is(context.Cause(ctx), errFenced) {
		return
	}
	c.halted[cell] = true
}

// ErrCredentialsRefused stops a cell's run whose calls of a role were all
// refused for their credentials (HTTP 401 or 403): no later call of that
// role can succeed, and the run would go on spending the other role's
// calls on steps that cannot change the skill.
var ErrCredentialsRefused = errors.New("credentials refused")

// roleModel names a role's model and where it is served, for messages.
type roleModel struct {
	Model, BaseURL, KeyEnv string
}

// credentialsRefused returns an [ErrCredentialsRefused] error naming each
// role whose calls were refused for their credentials and of whose tasks
// none succeeded (a role that has answered before, then is refused, is
// left to the retries: a signed-in token can be refused once while it is
// replaced). nil when no role is so refused.
func credentialsRefused(rows []trainer.Row, models map[string]roleModel) error {
	type tally struct{ tasks, failed, auth int64 }
	by := map[string]*tally{}
	for _, r := range rows {
		if r.Stage == trainer.HedgedStage {
			continue
		}
		t := by[r.Role]
		if t == nil {
			t = &tally{}
			by[r.Role] = t
		}
		t.tasks += r.Tasks
		t.failed += r.FailedTasks
		t.auth += r.Causes.Auth
	}
	var roles []string
	for role, t := range by {
		if t.auth > 0 && t.tasks > 0 && t.failed == t.tasks {
			roles = append(roles, role)
		}
	}
	if len(roles) == 0 {
		return nil
	}
	sort.Strings(roles)
	var parts []string
	for _, role := range roles {
		t, m := by[role], models[role]
		p := fmt.Sprintf("the %s's calls were refused (%d attempts answered HTTP 401/403, none of its %d tasks succeeded)", role, t.auth, t.tasks)
		if m.Model != "" {
			p += " for model " + m.Model
		}
		if m.BaseURL != "" {
			p += " at " + m.BaseURL
		}
		fix := "set its API key"
		if m.KeyEnv != "" {
			fix = "check the key in " + m.KeyEnv
		}
		parts = append(parts, p+": "+fix+" (model."+role+"_api_key_env names the variable) or its sign-in; a run without --no-preflight checks the credentials before the first call")
	}
	return fmt.Errorf("%w: %s", ErrCredentialsRefused, strings.Join(parts, "; "))
}
