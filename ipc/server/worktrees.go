package server

import (
	"net/http"

	"github.com/sessiond/sessiond/ipc"
)

func (s *Server) listWorktrees(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	list, err := s.svc.Worktrees.ListWorktrees(r.Context(), c, r.URL.Query().Get("repo"))
	if err != nil {
		return err
	}
	if list == nil {
		list = []ipc.WorktreeInfo{}
	}
	return writeJSON(w, http.StatusOK, list)
}

func (s *Server) removeWorktree(w http.ResponseWriter, r *http.Request, c ipc.Caller) error {
	q := r.URL.Query()
	force, err := boolParam(q.Get("force"), "force")
	if err != nil {
		return err
	}
	resp, err := s.svc.Worktrees.RemoveWorktree(r.Context(), c, r.PathValue("name"), ipc.WorktreeRemoveRequest{Repo: q.Get("repo"), Force: force})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, resp)
}
