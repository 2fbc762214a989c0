package controller

import (
	"context"
	"io"
	"net/url"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"
)

// NewAttacher returns an AttachFunc that attaches to the pod's worker
// container through the API server (pods/attach: WebSocket, falling back
// to SPDY), as kubectl attach -i does. The worker's stderr goes to log.
func NewAttacher(cfg *rest.Config, log logr.Logger) (AttachFunc, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return func(_ context.Context, pod *corev1.Pod) (io.WriteCloser, io.ReadCloser, error) {
		req := cs.CoreV1().RESTClient().Post().Namespace(pod.Namespace).Resource("pods").Name(pod.Name).
			SubResource("attach").VersionedParams(&corev1.PodAttachOptions{
			Container: workerContainer, Stdin: true, Stdout: true, Stderr: true,
		}, scheme.ParameterCodec)
		exec, err := StreamExecutor(cfg, req.URL())
		if err != nil {
			return nil, nil, err
		}
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		// The stream outlives the caller's context (that bounds the
		// launch): closing stdout cancels it.
		sctx, cancel := context.WithCancel(context.Background())
		plog := log.WithValues("pod", pod.Namespace+"/"+pod.Name)
		go func() {
			err := exec.StreamWithContext(sctx, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Stderr: logWriter{plog}})
			if err == nil {
				err = io.EOF
			}
			outW.CloseWithError(err)
			_ = inR.Close() // an io.Pipe end's Close never fails
			cancel()
		}()
		return inW, &cancelReader{PipeReader: outR, cancel: cancel}, nil
	}, nil
}

type cancelReader struct {
	*io.PipeReader
	cancel context.CancelFunc
}

func (r *cancelReader) Close() error {
	r.cancel()
	return r.PipeReader.Close()
}

// logWriter logs a worker's stderr.
type logWriter struct{ log logr.Logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.log.Info("worker stderr", "text", string(p))
	return len(p), nil
}

// StreamExecutor opens a pod's attach or exec stream at u as kubectl does:
// WebSocket, falling back to SPDY where a proxy or an older API server
// refuses the upgrade.
func StreamExecutor(cfg *rest.Config, u *url.URL) (remotecommand.Executor, error) {
	spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		return nil, err
	}
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		return nil, err
	}
	// k8s.io/streaming's httpstream, as kubectl attach: client-go's
	// WebSocket transport returns that package's UpgradeFailureError, which
	// the deprecated copy in apimachinery does not recognise (no fallback).
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}
