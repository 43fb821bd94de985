package gateway

func (s *Server) fixieRoutes()   {}
func (s *Server) openAIRoutes()  {}
func (s *Server) graphQLRoutes() {}
