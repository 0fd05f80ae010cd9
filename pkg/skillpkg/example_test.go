package skillpkg_test

import (
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

func ExampleApply() {
	p, err := skillpkg.New(map[string]string{
		"SKILL.md":            "---\nname: units\ndescription: Convert units.\n---\n# Units\n",
		"references/units.md": "# Factors\n",
	}, skillpkg.Limits{})
	if err != nil {
		panic(err)
	}
	q, rows := skillpkg.Apply(p, []skillpkg.Edit{
		{File: "references/units.md", Op: "append", Content: "1 mile = 1.609 km"},
		{Op: "append", Content: "Open references/units.md for factors."},
		{File: "../../etc/cron.d/x", Op: "create_file", Content: "* * * * * boom"},
	}, skillpkg.ApplyOptions{})
	for _, r := range rows {
		fmt.Println(r.File, r.Status)
	}
	fmt.Print(skillpkg.Encode(q))
	// Output:
	// references/units.md applied_append
	// SKILL.md applied_append
	// ../../etc/cron.d/x refused_path_escape
	// <!-- SKILLPKG v1 files=2 -->
	// <!-- SKILLPKG FILE 29 - references/units.md -->
	// # Factors
	//
	// 1 mile = 1.609 km
	//
	// <!-- SKILLPKG SKILL.md -->
	// ---
	// name: units
	// description: Convert units.
	// ---
	// # Units
	//
	// Open references/units.md for factors.
}
