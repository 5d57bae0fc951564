package batch_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/rowfate/rowfate/batch"
)

type tier string

func (tier) Enum() []string { return []string{"free", "pro"} }

type planRow struct {
	Name   string `col:"name" validate:"required"`
	Tier   tier   `col:"tier"`
	Period string `col:"period" validate:"omitempty,oneof=monthly yearly"`
}

func TestTemplateColumns(t *testing.T) {
	t.Parallel()
	reg := batch.NewRegistry()
	err := batch.Register(reg, batch.Kind[planRow]{
		Name:      "plans",
		Processor: batch.ProcessFunc[planRow](func(context.Context, planRow) (string, error) { return "", nil }),
		Example:   &planRow{Name: "Acme", Tier: "pro", Period: "yearly"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cols, err := reg.TemplateColumns("plans")
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%+v", cols)
	want := "[{Name:name Example:Acme Required:true Enum:[] Note:} {Name:tier Example:pro Required:false Enum:[free pro] Note:} {Name:period Example:yearly Required:false Enum:[monthly yearly] Note:}]"
	if got != want {
		t.Fatalf("columns:\n got %s\nwant %s", got, want)
	}
	if _, err := reg.TemplateColumns("nope"); err == nil {
		t.Fatal("unknown kind: no error")
	}
}
