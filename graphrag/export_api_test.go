package graphrag

// SigParams is sigParams, for the fuzz test.
var SigParams = sigParams

// CheckMatchers is checkMatchers, for the test on real pages (this
// package's tests cannot extract them: crawler imports graphrag).
var CheckMatchers = checkMatchers

// The exception-name matchers and the expressions they replace, for
// BenchmarkAPIMatchers.
var (
	ExcNames   = excNames
	CapIdents  = capIdents
	ReExcName  = reExcName
	ReCapIdent = reCapIdent
)
