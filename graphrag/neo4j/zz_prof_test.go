package neo4j

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
)

func TestZZProf(t *testing.T) {
	s := realStore(t)
	coll := "zzbench"
	ctx := context.Background()
	res, _ := neo4j.ExecuteQuery(ctx, s.driver, `MATCH (e:Entity {collection:'zzbench'}) RETURN count(e)`, nil, neo4j.EagerResultTransformer)
	if res.Records[0].Values[0].(int64) == 0 {
		docs := synthDocs(coll, benchDocs, benchPer, benchVocab)
		for i := 0; i < len(docs); i += 50 {
			if err := s.ReplaceDocuments(ctx, coll, docs[i:i+50]); err != nil {
				t.Fatal(err)
			}
		}
	}
	q := os.Getenv("ZZ_Q")
	params := map[string]any{"c": coll, "t": os.Getenv("ZZ_T"), "n": 1000}
	for i := 0; i < 3; i++ {
		start := time.Now()
		res, err := neo4j.ExecuteQuery(ctx, s.driver, "PROFILE "+q, params, neo4j.EagerResultTransformer)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("rows %d wall %v\n", len(res.Records), time.Since(start))
		if i == 2 {
			var walk func(p neo4j.ProfiledPlan, d int)
			walk = func(p neo4j.ProfiledPlan, d int) {
				fmt.Printf("%*s%s rows=%d dbhits=%d %v\n", d*2, "", p.Operator(), p.Records(), p.DbHits(), p.Arguments()["Details"])
				for _, c := range p.Children() {
					walk(c, d+1)
				}
			}
			walk(res.Summary.Profile(), 0)
		}
	}
}
