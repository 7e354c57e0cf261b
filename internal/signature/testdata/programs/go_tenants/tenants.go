package tenants

type Store struct {
	byTenant map[string]map[string]string
}

func NewStore() *Store {
	return &Store{byTenant: map[string]map[string]string{}}
}

func (s *Store) Put(tenant, key, value string) {
	s.byTenant[tenant][key] = value
}
