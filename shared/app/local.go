package app

import (
	"net/http"

	"github.com/sluice-gw/sluice/shared/app/appenv"
	"github.com/sluice-gw/sluice/shared/gateway"
)

// LocalLimits bound what one local-mode instance accepts from its clients
// (appenv.LocalLimits).
type LocalLimits = appenv.LocalLimits

// DefaultLocalLimits are local mode's defaults (appenv.DefaultLocalLimits).
func DefaultLocalLimits() LocalLimits { return appenv.DefaultLocalLimits() }

// Server is the local-mode HTTP server of the gateway and the admin API,
// bounded by Settings.Local. It sets no ReadTimeout or WriteTimeout: those
// would end long streams.
func (g *Gateway) Server() *http.Server {
	l := g.local
	h := gateway.BodyTimeout(g.HTTP, l.BodyTimeout)
	h = gateway.LimitRequests(h, l.MaxRequests)
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		MaxHeaderBytes:    l.MaxHeaderBytes,
		IdleTimeout:       l.IdleTimeout,
	}
}
