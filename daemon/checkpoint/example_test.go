package checkpoint_test

import (
	"context"
	"log"

	"github.com/sessiond/sessiond/daemon/checkpoint"
	"github.com/sessiond/sessiond/daemon/watch"
)

// A session's checkpoints, incremental when they can be: read the watch's
// changes since the mark that went with the last checkpoint, take the
// checkpoint with them, and keep the new mark and tree only if it worked
// (a failed checkpoint is retried with everything since the old mark).
func ExampleCheckpointer_Take_incremental() {
	ctx := context.Background()
	leaveOut := checkpoint.DefaultLeaveOut
	ignore := []string{"*.tmp"} // the spec's [watch] ignore, given to both
	hub, err := watch.NewHub(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer hub.Close()
	w, err := hub.Watch("/home/me/project", watch.Options{LeaveOut: leaveOut, Ignore: ignore})
	if err != nil {
		log.Fatal(err)
	}
	c := checkpoint.New(checkpoint.Options{StateDir: "/var/lib/sessiond", LeaveOut: leaveOut})

	var mark watch.Mark // the zero Mark: since the watch started
	var base string     // the tree of the session's last checkpoint
	for _, turn := range []string{"Add a retry to the fetcher", "Now the tests"} {
		ch, err := w.Changes(ctx, mark)
		if err != nil {
			log.Fatal(err)
		}
		res, err := c.Take(ctx, checkpoint.TakeRequest{
			Dir: "/home/me/project", SessionID: "a1b2c3", Turn: turn, Ignore: ignore,
			Changes: &checkpoint.Changes{Base: base, Paths: ch.Paths, Complete: ch.Complete, Incomplete: ch.Incomplete},
		})
		if err != nil {
			log.Print(err) // mark and base stay: the next one covers these changes too
			continue
		}
		mark, base = ch.Mark, res.Tree
		log.Printf("%.12s %s (incremental %v %s)", res.ID, res.Summary, res.Incremental, res.FullReason)
	}
}
