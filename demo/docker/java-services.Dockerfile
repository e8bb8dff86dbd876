# syntax=docker/dockerfile:1
# The demo services (backend, frontend, jfront): one Maven build, one runtime
# stage per service, picked with `target:` in docker-compose.yml. The build
# context is the repository root so that weft's Java agent jar
# (pkg/javaagent/weft-agent.jar, built by scripts/build-agent.sh) can be
# copied in; java-services.Dockerfile.dockerignore trims it.

FROM maven:3.9.11-eclipse-temurin-25 AS build
WORKDIR /src
COPY demo/services/ ./
# The cache mount keeps ~/.m2 across builds without putting it in a layer.
RUN --mount=type=cache,target=/root/.m2 \
    mvn -q -B package -DskipTests

FROM eclipse-temurin:25-jre AS base
COPY pkg/javaagent/weft-agent.jar /opt/weft/weft-agent.jar
# BIND: the services listen on 127.0.0.1 by default, unreachable from other
# containers. The agent is on by default; docker-compose.yml sets
# JAVA_TOOL_OPTIONS itself, and frontend-noagent drops the agent from it.
ENV BIND=0.0.0.0 \
    JAVA_TOOL_OPTIONS="-javaagent:/opt/weft/weft-agent.jar -XX:+PreserveFramePointer"
WORKDIR /app
# Any non-root uid: the services need no passwd entry and write only to /tmp.
USER 10001:10001

FROM base AS backend
COPY --from=build /src/backend/target/backend.jar /app/backend.jar
ENV PORT=8082 OTEL_SERVICE_NAME=backend
EXPOSE 8082
ENTRYPOINT ["java", "-jar", "/app/backend.jar"]

FROM base AS frontend
COPY --from=build /src/frontend/target/frontend.jar /app/frontend.jar
ENV PORT=8080 OTEL_SERVICE_NAME=frontend
EXPOSE 8080
ENTRYPOINT ["java", "-jar", "/app/frontend.jar"]

FROM base AS jfront
COPY --from=build /src/jfront/target/jfront.jar /app/jfront.jar
ENV PORT=8081 OTEL_SERVICE_NAME=jfront
EXPOSE 8081
ENTRYPOINT ["java", "-jar", "/app/jfront.jar"]
