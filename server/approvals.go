package server

import (
	"context"
	"net/http"

	"github.com/agentd-dev/agentd/api"
	"github.com/agentd-dev/agentd/engine"
)

// approvalRoutes serves the approvals (docs/semantics.md §8.20): the list and one
// approval for the viewer, approver and admin roles, a decision for the approver and
// admin roles, from a token or from the viewer's browser session with its CSRF token
// (authorizeWrites). A token confined to a tenant sees and decides only its tenant's.
func (s *Service) approvalRoutes(mux *apiMux, opts HTTPOptions) {
	mux.serve("GET "+api.ApprovalsPath, authorize(opts, RoleViewer, endpoint(func(ctx context.Context, r *http.Request) (any, int, *api.Error) {
		q := r.URL.Query()
		list, e := s.Approvals(ctx, engine.ApprovalFilter{Status: engine.ApprovalStatus(q.Get("status")), RequestID: q.Get("request_id")})
		return list, http.StatusOK, e
	})))
	mux.Handle(api.ApprovalsPath, methodNotAllowed(http.MethodGet))
	path := api.ApprovalsPath + "/{id}"
	mux.serve("GET "+path, authorize(opts, RoleViewer, endpoint(func(ctx context.Context, r *http.Request) (any, int, *api.Error) {
		a, e := s.Approval(ctx, r.PathValue("id"))
		return a, http.StatusOK, e
	})))
	mux.serve("POST "+path, authorizeWrites(opts, RoleApprover, endpoint(func(ctx context.Context, r *http.Request) (any, int, *api.Error) {
		var req api.ApprovalDecisionRequest
		if e := decodeBody(r.Body, opts.MaxBody, &req); e != nil {
			return nil, 0, e
		}
		if req.Decision == "" {
			return nil, 0, missing("decision")
		}
		a, e := s.DecideApproval(ctx, r.PathValue("id"), req.Decision, req.Comment)
		return a, http.StatusOK, e
	})))
	mux.Handle(path, methodNotAllowed("GET, POST"))
}

// Approvals lists the approvals f selects that the caller's tenant may see.
func (s *Service) Approvals(ctx context.Context, f engine.ApprovalFilter) (*api.ApprovalList, *api.Error) {
	list, err := s.driver.Approvals(ctx, f)
	if err != nil {
		return nil, api.ErrorOf(err)
	}
	out := &api.ApprovalList{Approvals: make([]api.Approval, len(list))}
	for i, a := range list {
		out.Approvals[i] = api.ApprovalOf(a)
	}
	return out, nil
}

// Approval returns approval id, when the caller's tenant may see it.
func (s *Service) Approval(ctx context.Context, id string) (*api.Approval, *api.Error) {
	a, err := s.driver.Approval(ctx, id)
	if err != nil {
		return nil, api.ErrorOf(err)
	}
	out := api.ApprovalOf(a)
	return &out, nil
}

// DecideApproval records the caller's decision on approval id, naming the caller's
// token as who decided (DeciderOf).
func (s *Service) DecideApproval(ctx context.Context, id string, decision engine.ApprovalDecision, comment string) (*api.Approval, *api.Error) {
	a, err := s.driver.Decide(ctx, id, decision, DeciderOf(ctx), comment)
	if err != nil {
		return nil, api.ErrorOf(err)
	}
	out := api.ApprovalOf(a)
	return &out, nil
}
