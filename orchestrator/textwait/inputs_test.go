package textwait

import "testing"

// Inputs keep the last MaxInputs, and After returns those at or after a
// revision above a seq, with the last seq recorded.
func TestInputs(t *testing.T) {
	t.Parallel()
	var in Inputs
	in.Record(1, 0, "$ ", "") // empty text is not kept
	if got, seq := in.After(0, 0); len(got) != 0 || seq != 0 {
		t.Fatalf("after an empty input: %v, seq %d", got, seq)
	}
	for i := range MaxInputs + 6 {
		in.Record(uint64(i), uint64(10*i), "$ ", "echo")
	}
	all, seq := in.After(0, 0)
	if len(all) != MaxInputs || seq != MaxInputs+6 || all[0].Seq != 7 {
		t.Fatalf("kept %d inputs, first seq %d, last seq %d; want %d, 7, %d", len(all), all[0].Seq, seq, MaxInputs, MaxInputs+6)
	}
	got, _ := in.After(MaxInputs, MaxInputs+3)
	if len(got) != 3 || got[0].Seq != MaxInputs+4 || got[0].At != 10*(MaxInputs+3) {
		t.Fatalf("after rev %d, seq %d: %+v", MaxInputs, MaxInputs+3, got)
	}
}
