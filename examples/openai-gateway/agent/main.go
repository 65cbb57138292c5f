// Command agent is a stock agent loop written with the official OpenAI Go client, as
// any agent is: it sends the question with its tools, runs the tool calls the model
// asks for on its own side, sends the results back, and prints the answer. Nothing in
// it knows agentd: it reaches the model through agentd's gateway only because its base
// URL is the daemon's.
//
//	agent [-tenant NAME] [-stream] QUESTION
//
// AGENTD is the daemon's base URL (default http://127.0.0.1:8181); AGENTD_TOKEN, when
// the daemon requires one, is sent as the API key. It prints one line per event:
// request_id, tool_call, tool_result, stream_mode and answer.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// maxRounds bounds the tool rounds of one question.
const maxRounds = 5

var tools = []openai.ChatCompletionToolUnionParam{
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "get_quote",
		Description: openai.String("The latest price of a stock."),
		Parameters: shared.FunctionParameters{"type": "object", "required": []string{"symbol"},
			"properties": map[string]any{"symbol": map[string]string{"type": "string"}}},
	}),
	openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "place_trade",
		Description: openai.String("Buy a stock for an amount in USD."),
		Parameters: shared.FunctionParameters{"type": "object", "required": []string{"symbol", "amount"},
			"properties": map[string]any{"symbol": map[string]string{"type": "string"}, "amount": map[string]string{"type": "number"}}},
	}),
}

// runTool is the agent's own tool implementation.
func runTool(name, arguments string) string {
	var args struct {
		Symbol string  `json:"symbol"`
		Amount float64 `json:"amount"`
	}
	_ = json.Unmarshal([]byte(arguments), &args)
	switch name {
	case "get_quote":
		return fmt.Sprintf(`{"symbol":%q,"price":182.5,"currency":"USD"}`, args.Symbol)
	case "place_trade":
		return fmt.Sprintf(`{"order_id":"ord-1","symbol":%q,"amount":%g}`, args.Symbol, args.Amount)
	}
	return `{"error":"unknown tool"}`
}

func main() {
	tenant := flag.String("tenant", "", "sent as metadata.tenant")
	stream := flag.Bool("stream", false, "stream the completions")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: agent [-tenant NAME] [-stream] QUESTION")
		os.Exit(2)
	}
	base := os.Getenv("AGENTD")
	if base == "" {
		base = "http://127.0.0.1:8181"
	}
	key := os.Getenv("AGENTD_TOKEN")
	if key == "" {
		key = "no-token"
	}
	client := openai.NewClient(option.WithBaseURL(base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0))
	params := openai.ChatCompletionNewParams{
		Model: "scripted-stock-model",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.SystemMessage("You are a stock assistant. Use the tools."),
			openai.UserMessage(flag.Arg(0)),
		},
		Tools: tools,
	}
	if *tenant != "" {
		params.Metadata = shared.Metadata{"tenant": *tenant}
	}
	if err := run(context.Background(), client, params, *stream); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(1)
	}
}

// run is the agent loop: ask, run the tools asked for, repeat until an answer.
func run(ctx context.Context, client openai.Client, params openai.ChatCompletionNewParams, stream bool) error {
	for round := 1; round <= maxRounds; round++ {
		msg, header, err := complete(ctx, client, params, stream)
		if err != nil {
			return err
		}
		if round == 1 {
			fmt.Println("request_id:", header.Get("X-Request-Id"))
		}
		if mode := header.Get("X-Agentd-Stream"); mode != "" {
			fmt.Println("stream_mode:", mode)
		}
		if len(msg.ToolCalls) == 0 {
			fmt.Println("answer:", msg.Content)
			return nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, call := range msg.ToolCalls {
			fmt.Println("tool_call:", call.Function.Name, call.Function.Arguments)
			result := runTool(call.Function.Name, call.Function.Arguments)
			fmt.Println("tool_result:", call.Function.Name, result)
			params.Messages = append(params.Messages, openai.ToolMessage(result, call.ID))
		}
	}
	return fmt.Errorf("no answer after %d rounds", maxRounds)
}

// complete sends one request, streamed or not, and returns the assistant message.
func complete(ctx context.Context, client openai.Client, params openai.ChatCompletionNewParams, stream bool) (openai.ChatCompletionMessage, http.Header, error) {
	var resp *http.Response
	if !stream {
		c, err := client.Chat.Completions.New(ctx, params, option.WithResponseInto(&resp))
		if err != nil {
			return openai.ChatCompletionMessage{}, nil, err
		}
		return c.Choices[0].Message, resp.Header, nil
	}
	s := client.Chat.Completions.NewStreaming(ctx, params, option.WithResponseInto(&resp))
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		acc.AddChunk(s.Current())
	}
	if err := s.Err(); err != nil {
		return openai.ChatCompletionMessage{}, nil, err
	}
	return acc.Choices[0].Message, resp.Header, nil
}
