package gateway

func (s *Server) openAIRoutes()  {}
func (s *Server) graphQLRoutes() {}
