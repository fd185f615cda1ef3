package node

// recordKeyframe hands the mirror's screen to the recording every
// 1 MiB of output, so that a trace replays from the
// nearest one (orchestrator/record, keyframe.go). Only with the mirror
// emulating every byte the recording got (not during a burst, when it is
// taken from tmux at moments that are not the stream's). Pump goroutine
// only, after the chunk was written to the mirror.
func (n *Node) recordKeyframe() {
	rec := n.Rec.Load()
	if rec == nil || n.stale || !rec.Recorder.WantsKeyframe() {
		return
	}
	rec.Recorder.Keyframe(n.Snapshot(), n.Scr.Modes().MouseSGR)
}
