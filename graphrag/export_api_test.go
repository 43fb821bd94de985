package graphrag

// SigParams is sigParams, for the fuzz test.
var SigParams = sigParams
