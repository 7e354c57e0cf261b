// Package deploytest checks the production deployment files against the
// real tools: docker-compose.yml with docker-compose, the Postgres init
// script with a real PostgreSQL server, and the Dockerfile with a real
// image build. It holds tests only.
package deploytest
