package extractive

// RenderStep is renderStep, for the external tests.
var RenderStep = renderStep
